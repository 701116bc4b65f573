-- :TopicForestChat: one markdown buffer per root, the transcript and below its last "## You"
-- the prompt. <CR> (normal mode) sends, replies stream in as chatDelta arrives, <C-c> stops.
-- Errors appear in the transcript and as a notification, never as an exception.
local config = require('topicforest.config')
local server = require('topicforest.server')
local tf = require('topicforest')
local ui = require('topicforest.ui')

local M = {}

local YOU = '## You'
local MODEL = '## Topic Forest'
local HISTORY_LIMIT = 200
local ns = vim.api.nvim_create_namespace('topicforest-chat')
-- an extmark on the prompt's heading: a message whose text has a "## You" line is no prompt
local prompt_ns = vim.api.nvim_create_namespace('topicforest-chat-prompt')

-- per root: { buf, turn = { stop }, attachments = Attachment[], loading = sends waiting }
local chats = {}
-- the last file the user was in, per root (relative path): the chat's activeFile
M.last_file = {}

local function state(root)
  chats[root] = chats[root] or { attachments = {} }
  return chats[root]
end

local function valid(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local function set_modifiable(buf, on)
  vim.bo[buf].modifiable = on
end

--- Appends `text` to the end of the buffer (the streamed reply), keeping a following cursor.
local function append(buf, text)
  local last = vim.api.nvim_buf_line_count(buf)
  local tail = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ''
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    following[win] = vim.api.nvim_win_get_cursor(win)[1] == last
  end
  local modifiable = vim.bo[buf].modifiable
  set_modifiable(buf, true)
  vim.api.nvim_buf_set_text(buf, last - 1, #tail, last - 1, #tail, ui.lines(text))
  set_modifiable(buf, modifiable)
  local count = vim.api.nvim_buf_line_count(buf)
  for win, follow in pairs(following) do
    if follow then
      vim.api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

local function add_lines(buf, lines)
  local modifiable = vim.bo[buf].modifiable
  set_modifiable(buf, true)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
  set_modifiable(buf, modifiable)
end

--- Marks line `line` (1-based) as the prompt's heading.
local function set_prompt(buf, line)
  vim.api.nvim_buf_clear_namespace(buf, prompt_ns, 0, -1)
  vim.api.nvim_buf_set_extmark(buf, prompt_ns, line - 1, 0, {})
end

--- The line (1-based) of the prompt's heading: the prompt starts below it.
local function prompt_line(buf)
  local mark = vim.api.nvim_buf_get_extmarks(buf, prompt_ns, 0, -1, { limit = 1 })[1]
  if mark and vim.api.nvim_buf_get_lines(buf, mark[2], mark[2] + 1, false)[1] == YOU then
    return mark[2] + 1
  end
  -- the heading was edited away: the last one left
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i = #lines, 1, -1 do
    if lines[i] == YOU then
      return i
    end
  end
  return nil
end

local function ref(a)
  if a.kind == 'problems' then
    return ('[attached problems of %s]'):format(a.path)
  end
  if a.range and a.range ~= vim.NIL then
    return ('[attached %s:%d-%d]'):format(a.path, a.range.startLine + 1, a.range.endLine + 1)
  end
  return ('[attached %s]'):format(a.path)
end

--- Shows the attachments waiting for the next message beside the prompt's heading.
local function show_pending(root)
  local chat = state(root)
  if not valid(chat.buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(chat.buf, ns, 0, -1)
  local line = prompt_line(chat.buf)
  if line and #chat.attachments > 0 then
    local refs = vim.tbl_map(ref, chat.attachments)
    vim.api.nvim_buf_set_extmark(chat.buf, ns, line - 1, 0, {
      virt_text = { { '  ' .. table.concat(refs, ' '), 'Comment' } },
    })
  end
end

local function new_prompt(buf)
  add_lines(buf, { '', YOU, '' })
  set_prompt(buf, vim.api.nvim_buf_line_count(buf) - 1)
end

--- Whether a reply is streaming in the root's chat (it says so when it is).
function M.busy(root)
  if state(root).turn then
    local stop = config.options.chat.keys.stop
    vim.notify('Topic Forest: a reply is still streaming; ' .. stop .. ' stops it', vim.log.levels.WARN)
    return true
  end
  return false
end

--- Header and transcript of the root's current thread, then an empty prompt.
function M.load(root)
  local chat = state(root)
  local buf = chat.buf
  if not valid(buf) or M.busy(root) then
    return
  end
  local thread = tf.thread({ root = root })
  local keys = config.options.chat.keys
  local header = {
    '# Topic Forest · ' .. vim.fn.fnamemodify(root, ':~'),
    ('_%s send · %s stop · %s threads · %s topics · %s what the model sees_'):format(
      keys.send,
      keys.stop,
      keys.threads,
      keys.topics,
      keys.context
    ),
  }
  chat.loading = chat.loading or {}
  chat.generation = (chat.generation or 0) + 1
  local generation = chat.generation
  tf.history({ root = root, thread = thread, limit = HISTORY_LIMIT }, function(err, result)
    if generation ~= chat.generation then
      return -- a later load (another thread) replaces this one
    end
    local waiting = chat.loading or {}
    chat.loading = nil
    if not valid(buf) then
      return
    end
    local lines = vim.deepcopy(header)
    if err then
      vim.list_extend(lines, { '', '> **Error:** ' .. server.describe(err):gsub('\n', ' ') })
    end
    for _, m in ipairs(result and result.messages or {}) do
      vim.list_extend(lines, { '', m.role == 'user' and YOU or MODEL })
      vim.list_extend(lines, ui.lines(m.content))
      if m.cancelled then
        table.insert(lines, '_(stopped)_')
      end
    end
    -- what was typed meanwhile stays in the prompt
    local typed = prompt_line(buf)
    typed = typed and vim.api.nvim_buf_get_lines(buf, typed, -1, false) or {}
    vim.list_extend(lines, { '', YOU })
    local heading = #lines
    vim.list_extend(lines, #typed > 0 and typed or { '' })
    ui.set_lines(buf, lines)
    set_prompt(buf, heading)
    show_pending(root)
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      vim.api.nvim_win_set_cursor(win, { #lines, 0 })
    end
    for _, run in ipairs(waiting) do
      run()
    end
  end)
end

local function finish(root, buf, err, result)
  local chat = state(root)
  chat.turn = nil
  if valid(buf) then
    if err then
      local lines = { '', '> **Error:** ' .. err.message:gsub('\n', ' ') }
      if err.hint then
        table.insert(lines, '> ' .. err.hint)
      end
      add_lines(buf, lines)
    elseif result and result.cancelled then
      add_lines(buf, { '', '_(stopped)_' })
    end
    new_prompt(buf)
    set_modifiable(buf, true)
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    end
  end
  if err then
    ui.error(err, 'chat')
  end
  require('topicforest.topics').refresh(root)
end

--- Sends `text` (default: the prompt under the last "## You") with the pending attachments.
function M.send(root, text)
  local chat = state(root)
  local buf = chat.buf
  if chat.loading then
    -- the thread is being read into the buffer: send once it is there
    return table.insert(chat.loading, function()
      M.send(root, text)
    end)
  end
  if M.busy(root) then
    return
  end
  local line = prompt_line(buf)
  if text == nil then
    text = line and table.concat(vim.api.nvim_buf_get_lines(buf, line, -1, false), '\n') or ''
  elseif line then
    ui.set_lines(buf, vim.list_extend(vim.api.nvim_buf_get_lines(buf, 0, line, false), ui.lines(text)))
    set_prompt(buf, line)
  end
  text = vim.trim(text)
  if text == '' then
    return vim.notify('Topic Forest: type a message under "' .. YOU .. '" first', vim.log.levels.WARN)
  end
  local attachments = chat.attachments
  chat.attachments = {}
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local refs = vim.tbl_map(ref, attachments)
  add_lines(buf, vim.list_extend(refs, { '', MODEL, '' }))
  set_modifiable(buf, false)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
  chat.turn = tf.chat(text, {
    root = root,
    attachments = #attachments > 0 and attachments or nil,
    active_file = M.last_file[root],
    on_delta = function(delta)
      if valid(buf) then
        append(buf, delta)
      end
    end,
  }, function(err, result)
    finish(root, buf, err, result)
  end)
end

--- Stops the streaming reply (what arrived stays, marked stopped).
function M.stop(root)
  local chat = state(root)
  if chat.turn then
    chat.turn.stop()
  end
end

--- Notes a file buffer as the user's active file in its root (and tells a running server).
function M.track(bufnr)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return
  end
  local root = server.root(bufnr)
  local path = vim.fs.normalize(vim.api.nvim_buf_get_name(bufnr))
  if root and path:sub(1, #root + 1) == root .. '/' then
    M.last_file[root] = path:sub(#root + 2)
    server.active_file(root, vim.uri_from_fname(path))
  end
end

--- Opens (or shows) the chat of the current buffer's root.
function M.open(opts)
  M.track(vim.api.nvim_get_current_buf())
  local root, err = tf.root(opts)
  if not root then
    return ui.error(err)
  end
  local client, start_err = server.ensure(root)
  if not client then
    return ui.error(server.error(start_err))
  end
  local chat = state(root)
  if not valid(chat.buf) then
    if not tf.has_thread({ root = root }) then
      -- continue the newest thread, as the chat view does after a restart
      local listed = tf.threads({ root = root })
      local newest = listed and listed.threads[1]
      tf.set_thread(newest and newest.threadId or nil, { root = root })
    end
    chat.buf = ui.scratch('topicforest://chat/' .. root, root, 'markdown')
    local keys = config.options.chat.keys
    ui.map(chat.buf, keys.send, function()
      M.send(root)
    end, 'Topic Forest: send')
    vim.keymap.set({ 'n', 'i' }, keys.stop, function()
      M.stop(root)
    end, { buffer = chat.buf, desc = 'Topic Forest: stop the reply' })
    ui.map(chat.buf, keys.threads, function()
      require('topicforest.threads').pick({ root = root })
    end, 'Topic Forest: threads')
    ui.map(chat.buf, keys.topics, function()
      require('topicforest.topics').open({ root = root })
    end, 'Topic Forest: topics')
    ui.map(chat.buf, keys.context, function()
      require('topicforest.topics').context({ root = root })
    end, 'Topic Forest: what the model sees')
    M.load(root)
  end
  local win = ui.show(chat.buf, config.options.chat.split)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  return chat.buf
end

--- The visual selection (lines l1..l2 of `bufnr`) as a chat attachment.
function M.selection(root, bufnr, l1, l2)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local path = name ~= '' and vim.fs.normalize(name) or '[No Name]'
  if path:sub(1, #root + 1) == root .. '/' then
    path = path:sub(#root + 2)
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, l1 - 1, l2, false)
  local language = vim.bo[bufnr].filetype
  return {
    kind = 'selection',
    path = path,
    range = { startLine = l1 - 1, endLine = l2 - 1 },
    language = language ~= '' and language or nil,
    text = table.concat(lines, '\n'),
  }
end

--- :'<,'>TopicForestAsk [question]: attaches the lines to the next message (sent at once when a
--- question is given).
function M.ask(l1, l2, question, opts)
  local source = vim.api.nvim_get_current_buf()
  local root, err = tf.root(opts)
  if not root then
    return ui.error(err)
  end
  local attachment = M.selection(root, source, l1, l2)
  if not M.open({ root = root }) then
    return
  end
  local chat = state(root)
  table.insert(chat.attachments, attachment)
  if question and vim.trim(question) ~= '' then
    return M.send(root, question)
  end
  show_pending(root)
end

-- a thread deleted elsewhere may be the one shown: then the chat starts a new thread
table.insert(server.listeners.threadsChanged, function(params, root)
  local chat = root and chats[root]
  if not (chat and valid(chat.buf)) or chat.turn or params.threadId ~= tf.thread({ root = root }) then
    return
  end
  tf.threads({ root = root }, function(err, listed)
    for _, t in ipairs(not err and listed.threads or {}) do
      if t.threadId == params.threadId then
        return
      end
    end
    if not err then
      tf.set_thread(nil, { root = root })
      M.load(root)
    end
  end)
end)

return M
