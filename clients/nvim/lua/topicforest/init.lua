-- Topic Forest for Neovim: the Lua API (:help topicforest-api). Every call takes `opts` (root,
-- bufnr, thread, timeout, …) and either a callback `cb(err, result)`, or none: it then waits for
-- the answer (at most opts.timeout or setup's timeout_ms) and returns `result, err`. Errors are
-- tables { code, message, hint }; nothing here throws on a bad server, answer or workspace.
local config = require('topicforest.config')
local server = require('topicforest.server')

local M = {}

math.randomseed(tonumber(tostring(vim.uv.hrtime()):sub(-9)) or os.time())

-- the current chat thread of each root
local current = {}
-- chat turns streaming, by turnId: their on_delta
local turns = {}

table.insert(server.listeners.chatDelta, function(params)
  local on_delta = turns[params.turnId]
  if on_delta then
    on_delta(params.delta, params.index)
  end
end)

--- Applies options (:help topicforest-setup); a running server gets the new settings at once.
---@return boolean ok
function M.setup(opts)
  local err = config.set(opts)
  if err then
    server.notify(err)
    return false
  end
  server.configure()
  return true
end

-- (opts, cb) in any of the shapes callers use: (opts), (cb), (opts, cb)
local function args(opts, cb)
  if type(opts) == 'function' then
    return {}, opts
  end
  return opts or {}, cb
end

--- The workspace root the call is for: opts.root, else the buffer's (opts.bufnr or current).
---@return string|nil root, table|nil err
function M.root(opts)
  opts = opts or {}
  if type(opts.root) == 'string' and opts.root ~= '' then
    return vim.fs.normalize(vim.fn.fnamemodify(opts.root, ':p'))
  end
  local root, err = server.root(opts.bufnr)
  return root, err and server.error(err) or nil
end

-- Runs `verb` for the call's root: sync (returns result, err) or with cb.
local function run(verb, params, opts, cb)
  local root, err = M.root(opts)
  if not root then
    if cb then
      vim.schedule(function()
        cb(err, nil)
      end)
      return nil
    end
    return nil, err
  end
  return server.call(root, verb, params, opts.timeout, cb)
end

local function new_id(prefix)
  return ('%s-%s-%04x'):format(prefix, os.date('!%Y%m%dT%H%M%S'), math.random(0, 0xffff))
end

--- The current thread of the root (a new id until one is chosen or written to).
function M.thread(opts)
  local root = M.root(opts or {})
  if not root then
    return nil
  end
  current[root] = current[root] or new_id('nvim')
  return current[root]
end

--- Whether a thread was chosen (or written to) for the root in this session.
function M.has_thread(opts)
  local root = M.root(opts or {})
  return root ~= nil and current[root] ~= nil
end

--- Makes `thread` (or a new thread, when nil) the root's current one; returns its id.
function M.set_thread(thread, opts)
  local root = M.root(opts or {})
  if not root then
    return nil
  end
  current[root] = thread or new_id('nvim')
  return current[root]
end

local function thread_of(opts)
  return opts.thread or M.thread(opts)
end

--- Sends `text` to the chat model with the root's memory. opts: thread, attachments (the wire's
--- Attachment list), model, active_file, retry_of, on_delta(delta, index) for the streamed reply.
--- With cb it returns { stop = fun() } (the partial reply is kept, the result says `cancelled`).
function M.chat(text, opts, cb)
  opts, cb = args(opts, cb)
  local root, err = M.root(opts)
  if type(text) ~= 'string' or vim.trim(text) == '' then
    err = server.error('chat: the message is empty')
  end
  if not root or err then
    if cb then
      vim.schedule(function()
        cb(err, nil)
      end)
      return nil
    end
    return nil, err
  end
  local turn = new_id('turn')
  local params = {
    threadId = thread_of(opts),
    turnId = turn,
    message = text,
    activeFile = opts.active_file,
    attachments = opts.attachments,
    model = opts.model,
    retryOf = opts.retry_of,
  }
  if opts.on_delta then
    turns[turn] = opts.on_delta
  end
  local function finish(e, result)
    turns[turn] = nil
    if cb then
      cb(e, result)
    end
  end
  if cb then
    local handle = server.request(root, 'chat', params, finish)
    return {
      stop = function()
        if handle then
          handle.cancel()
        end
      end,
    }
  end
  -- a chat turn streams for up to 120 s on the server: a longer default wait than other calls
  local timeout = opts.timeout or math.max(config.options.timeout_ms, 130000)
  local result, e = server.call(root, 'chat', params, timeout)
  turns[turn] = nil
  return result, e
end

--- Every topic, with what the next request of the thread carries (listTopics).
function M.list_topics(opts, cb)
  opts, cb = args(opts, cb)
  return run('listTopics', { threadId = thread_of(opts) }, opts, cb)
end

--- A topic's summary and original messages.
function M.preview(id, opts, cb)
  opts, cb = args(opts, cb)
  return run('previewTopic', { topicId = id }, opts, cb)
end

function M.drop(id, opts, cb)
  opts, cb = args(opts, cb)
  return run('dropTopic', { topicId = id }, opts, cb)
end

function M.restore(id, opts, cb)
  opts, cb = args(opts, cb)
  return run('restoreTopic', { topicId = id }, opts, cb)
end

--- Pins a topic (opts.pinned = false unpins).
function M.pin(id, opts, cb)
  opts, cb = args(opts, cb)
  return run('pinTopic', { topicId = id, pinned = opts.pinned ~= false }, opts, cb)
end

function M.expand(id, opts, cb)
  opts, cb = args(opts, cb)
  return run('expandTopic', { topicId = id }, opts, cb)
end

function M.collapse(id, opts, cb)
  opts, cb = args(opts, cb)
  return run('collapseTopic', { topicId = id }, opts, cb)
end

--- Exactly the history the next request of the thread carries. opts: query, active_file, thread.
function M.render_context(opts, cb)
  opts, cb = args(opts, cb)
  local params = { threadId = thread_of(opts), query = opts.query, activeFile = opts.active_file }
  return run('renderContext', params, opts, cb)
end

--- The root's threads, newest first ({ threads = Thread[] }).
function M.threads(opts, cb)
  opts, cb = args(opts, cb)
  return run('listThreads', {}, opts, cb)
end

--- A thread's messages in order (opts.thread, opts.limit).
function M.history(opts, cb)
  opts, cb = args(opts, cb)
  return run('threadHistory', { threadId = thread_of(opts), limit = opts.limit }, opts, cb)
end

function M.rename_thread(thread, title, opts, cb)
  opts, cb = args(opts, cb)
  return run('renameThread', { threadId = thread, title = title }, opts, cb)
end

function M.delete_thread(thread, opts, cb)
  opts, cb = args(opts, cb)
  return run('deleteThread', { threadId = thread }, opts, cb)
end

--- Stops the root's server (opts.all: every Topic Forest server); the next call starts it again.
--- opts.wait_ms: wait that long for it to exit (then it is killed).
function M.stop(opts)
  opts = opts or {}
  if opts.all then
    return server.stop(nil, opts.wait_ms)
  end
  local root = M.root(opts)
  if root then
    return server.stop(root, opts.wait_ms)
  end
end

--- Stops the root's server, waits for it to end (at most 5 s), starts a new one and reloads
--- the open topic lists. Returns the new client's id, or nil and an error.
function M.restart(opts)
  local root, err = M.root(opts or {})
  if not root then
    return nil, err
  end
  server.stop(root, 5000)
  local client, start_err = server.ensure(root)
  if not client then
    return nil, server.error(start_err)
  end
  if package.loaded['topicforest.topics'] then
    require('topicforest.topics').refresh(root)
  end
  return client.id
end

return M
