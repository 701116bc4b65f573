-- :checkhealth topicforest: Neovim's version, the server (found, its version), the model, the root.
local config = require('topicforest.config')
local server = require('topicforest.server')

local M = {}

local health = vim.health

--- The server command with `--version` in place of its trailing `serve`.
function M.version_cmd(cmd)
  local out = vim.deepcopy(cmd)
  if out[#out] == 'serve' then
    table.remove(out)
  end
  table.insert(out, '--version')
  return out
end

local function server_version(cmd)
  local ok, proc = pcall(vim.system, M.version_cmd(cmd), { text = true, env = config.options.cmd_env })
  if not ok then
    return nil, tostring(proc)
  end
  local result = proc:wait(20000)
  local text = vim.trim((result.stdout or '') .. (result.stderr or ''))
  if result.code ~= 0 then
    return nil, ('exit code %d: %s'):format(result.code, text)
  end
  return text
end

function M.check()
  health.start('Neovim')
  local v = vim.version()
  local shown = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. shown)
  else
    health.error('Neovim ' .. shown .. ': Topic Forest needs 0.10 or newer')
  end

  health.start('Server')
  local cmd = config.options.cmd
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    health.error(('%q is not executable or not on PATH'):format(cmd[1]), {
      'pipx install ./topicforest-<version>-py3-none-any.whl (or: uv tool install …)',
      "or set cmd in setup(), e.g. cmd = { '/path/to/venv/bin/python', '-m', 'topicforest', 'serve' }",
    })
  else
    health.ok(('command: %s (%s)'):format(table.concat(cmd, ' '), exe))
    local version, err = server_version(cmd)
    if version then
      health.ok(version)
    else
      health.error('the server did not report its version: ' .. err)
    end
  end

  health.start('Model')
  local settings = config.options.settings
  if type(settings.chatModel) == 'string' and settings.chatModel ~= '' then
    local at = settings.apiBase and (' at ' .. settings.apiBase) or ''
    health.ok('chat model: ' .. settings.chatModel .. at)
  else
    health.warn('no chat model: topics work, chat answers how to set one', {
      "setup({ settings = { chatModel = 'gpt-4o-mini' } }) with OPENAI_API_KEY exported;"
        .. ' see |topicforest-settings|',
    })
  end
  local models = settings.summaryModels
  if type(models) == 'table' and #models > 0 then
    health.ok('summary models: ' .. table.concat(models, ', '))
  else
    health.info('summaries: the offline extractive summarizer')
  end

  health.start('Workspace')
  local root, root_err = server.root(0)
  if not root then
    health.warn(root_err)
  else
    local client = server.get(root)
    local info = client and client.server_info
    local running = info and ('server running: %s %s'):format(info.name or '?', info.version or '')
    health.ok(('root: %s (%s)'):format(vim.fn.fnamemodify(root, ':~'), running or 'no server running yet'))
  end
end

return M
