-- Options of setup(): defaults, validation, and the settings the server is sent.
local M = {}

M.defaults = {
  -- the server command as a list (a pipx/uv install puts `topicforest` on PATH)
  cmd = { 'topicforest', 'serve' },
  -- extra environment for the server (API keys belong in your shell's environment instead)
  cmd_env = nil,
  -- the `topicForest.*` settings without the prefix (docs/configuration.md), e.g.
  -- { chatModel = 'gpt-4o-mini', historyBudget = 4096 }
  settings = {},
  -- files or folders that mark a workspace root, searched upward from the buffer's file
  root_markers = { '.git', '.hg', '.jj', 'pyproject.toml', 'package.json', 'Cargo.toml', 'go.mod' },
  -- a function(bufnr) -> root path or nil, used instead of root_markers when set
  root_dir = nil,
  -- how long a synchronous API call waits for the server (ms); callbacks never time out
  timeout_ms = 10000,
  chat = {
    -- how the chat opens: a command that makes a window (`vsplit`, `split`, `tabnew`, …)
    split = 'vsplit',
    keys = { send = '<CR>', stop = '<C-c>', threads = 'gt', context = 'gC', topics = 'gT' },
  },
  topics = {
    split = 'botright 12split',
    keys = {
      preview = { '<CR>', 'p' },
      drop = 'd',
      restore = 'r',
      pin = 'P',
      expand = 'e',
      collapse = 'c',
      context = 'C',
      refresh = 'R',
      close = 'q',
      help = 'g?',
    },
  },
}

M.options = vim.deepcopy(M.defaults)

--- Merges `opts` over the defaults; returns an error message for a bad option instead of throwing.
---@param opts table|nil
---@return string|nil error
function M.set(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    return 'setup() takes a table of options'
  end
  if opts.cmd ~= nil and (type(opts.cmd) ~= 'table' or type(opts.cmd[1]) ~= 'string') then
    return "setup(): `cmd` must be a list of strings, e.g. { 'topicforest', 'serve' }"
  end
  if opts.settings ~= nil and type(opts.settings) ~= 'table' then
    return 'setup(): `settings` must be a table of topicForest.* keys without the prefix'
  end
  for key in pairs(opts.settings or {}) do
    if type(key) == 'string' and key:match('^topicForest%.') then
      return ('setup(): settings key %q: leave out the "topicForest." prefix'):format(key)
    end
  end
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- lists replace the default rather than merge index by index
  M.options.cmd = opts.cmd or M.defaults.cmd
  M.options.root_markers = opts.root_markers or M.defaults.root_markers
  if opts.settings then
    M.options.settings = vim.deepcopy(opts.settings)
  end
  return nil
end

return M
