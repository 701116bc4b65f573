-- One `topicforest serve` per workspace root, started with vim.lsp and reused by every buffer and
-- tab in that root. Requests go through here: each answer, error or the server's death reaches
-- the caller's callback exactly once, and a synchronous call waits with a bound.
local config = require('topicforest.config')
local protocol = require('topicforest.protocol')

local M = {}

M.NAME = 'topicforest'
local HAS_011 = vim.fn.has('nvim-0.11') == 1

-- server -> client notifications by verb; each listener gets (params, root)
M.listeners = { topicsChanged = {}, chatDelta = {}, threadsChanged = {} }
-- callbacks of requests still waiting, by client id then request id
local pending = {}
-- clients we stopped on purpose (no "stopped unexpectedly" message)
local stopping = {}
-- our clients until their process has exited: id -> root (vim.lsp.get_clients leaves out
-- clients still initializing, and keeps exiting ones for a moment)
local roots = {}

--- Calls a client method the way the running Neovim wants it (0.11: `client:m()`, 0.10: `client.m()`).
local function call(client, method, ...)
  if HAS_011 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function notify(message, level)
  vim.schedule(function()
    vim.notify('Topic Forest: ' .. message, level or vim.log.levels.ERROR)
  end)
end
M.notify = notify

local function short(path)
  return vim.fn.fnamemodify(path, ':~')
end

-- What the user can do, per error code the server sends (the VS Code client says the same).
local E = protocol.errors
local ADVICE = {
  [E.ChatModelNotConfigured] = 'Set settings.chatModel in require("topicforest").setup() '
    .. '(:help topicforest-settings).',
  [E.ProviderError] = 'The model provider failed: check settings.chatModel and settings.apiBase, '
    .. 'that the API key is exported in the shell Neovim was started from, '
    .. 'and that the provider is reachable.',
  [E.StoreError] = 'The memory database could not be used: check that settings.storePath (or your '
    .. 'user data directory) is writable; details are in :TopicForestLog.',
  [E.UnknownTopic] = 'The topic no longer exists (it may have been merged); the list was refreshed.',
  [E.InvalidParams] = 'The server refused the request; details are in :TopicForestLog.',
}

--- An error as a table { code, message, hint } (never a throw).
---@param err table|string
function M.error(err, hint)
  if type(err) ~= 'table' then
    return { message = tostring(err), hint = hint }
  end
  local code = type(err.code) == 'number' and err.code or nil
  return {
    code = code,
    message = tostring(err.message or 'unknown error'),
    hint = hint or err.hint or ADVICE[code],
    data = err.data,
  }
end

--- One line (or two) a user can read: the message and what to do.
function M.describe(err)
  if err.hint and err.hint ~= '' then
    return err.message .. '\n' .. err.hint
  end
  return err.message
end

local AGAIN = 'Run the command again to start it anew; its log: :TopicForestLog.'

local function fail(cb, message, hint)
  local err = M.error(message, hint)
  vim.schedule(function()
    cb(err, nil)
  end)
end

-- JSON has no empty object in Lua: `{}` would be sent as `[]`, which the server refuses.
local function object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

-- -- roots ------------------------------------------------------------------------------------

--- The workspace root of a buffer: the one a plugin buffer (chat, topics) belongs to, else the
--- nearest folder above the buffer's file (or the current directory) holding a root marker.
---@return string|nil root, string|nil error
function M.root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local own = vim.b[bufnr].topicforest_root
  if type(own) == 'string' then
    return own
  end
  local opts = config.options
  local name = vim.api.nvim_buf_get_name(bufnr)
  local from = (name ~= '' and vim.bo[bufnr].buftype == '') and name or vim.fn.getcwd()
  local ok, root
  if opts.root_dir then
    ok, root = pcall(opts.root_dir, bufnr)
    if not ok then
      return nil, 'root_dir() failed: ' .. tostring(root)
    end
  else
    ok, root = pcall(vim.fs.root, from, opts.root_markers)
    root = ok and root or nil
  end
  if type(root) ~= 'string' or root == '' then
    return nil,
      ('no workspace root for %s: none of %s is in it or above it. Open a file inside a project, '
        .. ':cd into one, or set root_markers or root_dir in setup() (:help topicforest-root)'):format(
        short(from),
        table.concat(opts.root_markers, ', ')
      )
  end
  return vim.fs.normalize(root)
end

-- -- clients ----------------------------------------------------------------------------------

local function is_stopped(client)
  return call(client, 'is_stopped')
end

--- Our clients whose process has not exited yet (of `root`, or all), stopping ones included.
function M.clients(root)
  local out = {}
  for id, own in pairs(roots) do
    local client = vim.lsp.get_client_by_id(id)
    if client and (root == nil or own == root) then
      table.insert(out, client)
    end
  end
  return out
end

--- The running client of `root`, if any (never starts one).
function M.get(root)
  for _, client in ipairs(M.clients(root)) do
    if not is_stopped(client) then
      return client
    end
  end
  return nil
end

local function settings()
  return object(vim.deepcopy(config.options.settings))
end

local function handlers()
  local out = {}
  for verb, listeners in pairs(M.listeners) do
    out[protocol.notifications[verb]] = function(_, params, ctx)
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      local root = client and client.root_dir and vim.fs.normalize(client.root_dir) or nil
      for _, listener in ipairs(listeners) do
        local ok, err = pcall(listener, params, root)
        if not ok then
          notify(('%s handler failed: %s'):format(verb, err))
        end
      end
    end
  end
  return out
end

local function on_exit(code, signal, client_id)
  roots[client_id] = nil
  local waiting = pending[client_id] or {}
  pending[client_id] = nil
  local stopped = stopping[client_id]
  stopping[client_id] = nil
  local how = signal ~= 0 and ('signal %d'):format(signal) or ('exit code %d'):format(code)
  local message = ('the server stopped (%s)'):format(how)
  for _, cb in pairs(waiting) do
    fail(cb, message, AGAIN)
  end
  if not stopped and (code ~= 0 or signal ~= 0) then
    notify(message .. ". The next Topic Forest command starts it again; its log: :TopicForestLog")
  end
end

local function start(cfg)
  if HAS_011 then
    -- never vim.lsp's reuse: it would hand back a client still shutting down (M.get reuses)
    return vim.lsp.start(cfg, {
      attach = false,
      silent = true,
      reuse_client = function()
        return false
      end,
    })
  end
  -- 0.10 has no `attach = false`: start_client starts without attaching a buffer
  return vim.lsp.start_client(cfg)
end

--- The client of `root`, started if need be. The chat memory syncs no documents (like the VS Code
--- client's empty documentSelector): no buffer is attached; the active file is reported instead.
---@return table|nil client, string|nil error
function M.ensure(root)
  local client = M.get(root)
  if client then
    return client
  end
  local opts = config.options
  local exe = opts.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    return nil,
      ('the server command %q is not executable or not on PATH. Install the server (pipx install '
        .. 'topicforest-<version>-py3-none-any.whl, or uv tool install …) or set cmd in setup(); '
        .. 'see :help topicforest-install'):format(exe)
  end
  local cfg = {
    name = M.NAME,
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = settings(),
    settings = { topicForest = settings() },
    handlers = handlers(),
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        on_exit(code, signal, client_id)
      end)
    end,
  }
  local ok, id = pcall(start, cfg)
  if not ok or not id then
    local why = ok and 'see :TopicForestLog' or tostring(id)
    return nil, ('the server (%s) could not be started: %s'):format(table.concat(opts.cmd, ' '), why)
  end
  pending[id] = pending[id] or {}
  roots[id] = root
  return vim.lsp.get_client_by_id(id)
end

--- Sends the current settings to every running server (after setup() is called again).
function M.configure()
  for _, client in ipairs(M.clients()) do
    client.settings = { topicForest = settings() }
    -- one still initializing sends client.settings itself once initialized
    if client.initialized and not is_stopped(client) then
      call(client, 'notify', 'workspace/didChangeConfiguration', { settings = client.settings })
    end
  end
end

--- Stops the server of `root` (all servers without one); with `wait_ms`, waits at most that
--- long for the processes to exit, then kills what is left. Returns true when all are gone.
function M.stop(root, wait_ms)
  for _, client in ipairs(M.clients(root)) do
    stopping[client.id] = true
    call(client, 'stop')
  end
  if not wait_ms then
    return #M.clients(root) == 0
  end
  local function gone()
    return #M.clients(root) == 0
  end
  if not vim.wait(wait_ms, gone, 20) then
    for _, client in ipairs(M.clients(root)) do
      call(client, 'stop', true)
    end
    vim.wait(wait_ms, gone, 20)
  end
  return gone()
end

--- Tells a running server which file the user is in (it ranks topics by it).
function M.active_file(root, uri)
  local client = M.get(root)
  if client then
    call(client, 'notify', protocol.client_notifications.activeFileChanged, { uri = uri or vim.NIL })
  end
end

-- -- requests ---------------------------------------------------------------------------------

--- Sends `verb` (a key of protocol.requests) to the server of `root`; `cb(err, result)` runs
--- once, on the main loop: with the answer, the server's error, or the server's end.
---@return table|nil handle { cancel = fun() } while the request is out
function M.request(root, verb, params, cb)
  local method = protocol.requests[verb]
  if not method then
    fail(cb, 'unknown request ' .. tostring(verb))
    return nil
  end
  for _, field in ipairs(protocol.required[verb]) do
    if params == nil or params[field] == nil then
      fail(cb, ('%s: %s is required'):format(verb, field))
      return nil
    end
  end
  local client, err = M.ensure(root)
  if not client then
    fail(cb, err)
    return nil
  end
  local done = false
  local function once(e, result)
    if not done then
      done = true
      cb(e and M.error(e) or nil, result)
    end
  end
  local ok, id
  ok, id = call(client, 'request', method, object(params), function(e, result)
    if pending[client.id] and id then
      pending[client.id][id] = nil
    end
    once(e, result)
  end)
  if not ok or not id then
    fail(once, 'the server is not running', AGAIN)
    return nil
  end
  pending[client.id] = pending[client.id] or {}
  pending[client.id][id] = once
  return {
    cancel = function()
      if not done then
        call(client, 'cancel_request', id)
      end
    end,
  }
end

--- `request`, with `cb` asynchronous; without it synchronous: waits at most `timeout_ms`
--- (default: setup's timeout_ms) and returns `result, err`.
function M.call(root, verb, params, timeout_ms, cb)
  if cb then
    M.request(root, verb, params, cb)
    return nil
  end
  local done, err, result = false, nil, nil
  local handle = M.request(root, verb, params, function(e, r)
    done, err, result = true, e, r
  end)
  local timeout = timeout_ms or config.options.timeout_ms
  if not vim.wait(timeout, function()
    return done
  end, 10) then
    if handle then
      handle.cancel()
    end
    return nil, M.error(('%s: no answer from the server within %d ms'):format(verb, timeout))
  end
  return result, err
end

return M
