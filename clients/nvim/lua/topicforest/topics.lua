-- :TopicForestTopics (one row per topic: title, what it costs in the next request, its mode;
-- keys to preview, drop, restore, pin, expand, collapse), the preview float and
-- :TopicForestContext (exactly what the model sees next). Both refresh on topicsChanged.
local config = require('topicforest.config')
local server = require('topicforest.server')
local tf = require('topicforest')
local ui = require('topicforest.ui')

local M = {}

-- per topic-list buffer: { root, rows = { [line] = topic }, result }
local lists = {}
local HEADER_LINES = 2
local TITLE_CHARS = 48

local function list_name(root)
  return 'topicforest://topics/' .. root
end

local function context_name(root)
  return 'topicforest://context/' .. root
end

local function mark(topic, placement)
  if topic.dropped then
    return '⊘'
  elseif topic.pinned then
    return '▲'
  elseif placement.kind == 'sent' then
    return '●'
  end
  return '○'
end

--- The list's lines and which topic each row shows.
function M.render(result)
  local placed = ui.placements(result)
  local lines = {
    ('Topic Forest · %s / %s tokens in the next request · %d topic%s · g? for keys'):format(
      ui.compact_tokens(result.used or 0),
      ui.compact_tokens(result.budget or 0),
      #result.topics,
      #result.topics == 1 and '' or 's'
    ),
    '',
  }
  local rows = {}
  if #result.topics == 0 then
    table.insert(lines, 'No topics yet: older chat messages graduate into topics as the conversation grows.')
  end
  for _, topic in ipairs(result.topics) do
    local placement = placed[topic.id]
    local title = ui.excerpt(topic.title ~= '' and topic.title or ('Topic ' .. topic.id), TITLE_CHARS)
    local states = ui.states(topic)
    local line = ('%s %-6s%-' .. TITLE_CHARS .. 's  %-12s%s'):format(
      mark(topic, placement),
      '#' .. topic.id,
      title,
      ui.figure(placement),
      #states > 0 and (' [' .. table.concat(states, ', ') .. ']') or ''
    )
    table.insert(lines, line)
    rows[#lines] = topic
  end
  return lines, rows
end

--- Reloads the list(s) of `root` (all lists without one).
function M.refresh(root)
  for buf, list in pairs(lists) do
    if not vim.api.nvim_buf_is_valid(buf) then
      lists[buf] = nil
    elseif root == nil or list.root == root then
      tf.list_topics({ root = list.root }, function(err, result)
        if not vim.api.nvim_buf_is_valid(buf) then
          return
        end
        if err then
          list.error = err
          ui.set_lines(buf, { 'Topic Forest: ' .. server.describe(err):gsub('\n', ' — ') })
          list.rows = {}
          return
        end
        list.result, list.error = result, nil
        local lines
        lines, list.rows = M.render(result)
        ui.set_lines(buf, lines)
      end)
    end
  end
  M.refresh_context(root)
end

--- The topic on the cursor's row of the current list, or nil (with a message).
function M.current()
  local list = lists[vim.api.nvim_get_current_buf()]
  local topic = list and list.rows[vim.api.nvim_win_get_cursor(0)[1]]
  if not topic then
    vim.notify('Topic Forest: no topic on this line', vim.log.levels.WARN)
  end
  return topic, list
end

--- The preview's markdown: summary and every source message, model text fenced.
function M.preview_lines(topic, messages)
  local states = ui.states(topic)
  local lines = {
    '# ' .. vim.trim((topic.title or ''):gsub('[%s#]+', ' ')),
    '',
    ('Topic %d · %d messages · %d source tokens · %d summary tokens%s'):format(
      topic.id,
      topic.messageCount,
      topic.sourceTokens,
      topic.summaryTokens,
      #states > 0 and (' · ' .. table.concat(states, ', ')) or ''
    ),
    '',
    '## Summary',
    '',
  }
  local summary = topic.summary ~= vim.NIL and topic.summary or nil
  vim.list_extend(
    lines,
    summary and ui.lines(ui.fence(summary, 'text'))
      or { '_No summary yet: it is being written in the background._' }
  )
  if #(topic.files or {}) > 0 then
    vim.list_extend(lines, { '', 'Files: ' .. table.concat(topic.files, ', ') })
  end
  local changes = ui.reshape_lines(topic)
  if #changes > 0 then
    vim.list_extend(lines, { '', 'Reshaped by new messages:', '' })
    for _, change in ipairs(changes) do
      table.insert(lines, '- ' .. change)
    end
  end
  vim.list_extend(lines, { '', ('## Source messages (%d)'):format(#messages), '' })
  for _, m in ipairs(messages) do
    table.insert(
      lines,
      ('### %s · %s · %d tokens%s'):format(
        m.role == 'user' and 'User' or 'Assistant',
        ui.time(m.timestamp),
        m.tokens,
        m.cancelled and ' · cancelled' or ''
      )
    )
    table.insert(lines, '')
    vim.list_extend(lines, ui.lines(ui.fence(m.content, 'markdown')))
    table.insert(lines, '')
  end
  return lines
end

--- Opens the preview float of topic `id` of `root`.
function M.preview(id, root)
  tf.preview(id, { root = root }, function(err, result)
    if err then
      return ui.error(err, 'preview')
    end
    ui.float(('Topic %d'):format(id), M.preview_lines(result.topic, result.messages))
  end)
end

-- Row actions: the API verb and how its failure is named.
local ACTIONS = {
  drop = function(topic, o, cb)
    tf.drop(topic.id, o, cb)
  end,
  restore = function(topic, o, cb)
    tf.restore(topic.id, o, cb)
  end,
  pin = function(topic, o, cb)
    tf.pin(topic.id, vim.tbl_extend('force', o, { pinned = not topic.pinned }), cb)
  end,
  expand = function(topic, o, cb)
    tf.expand(topic.id, o, cb)
  end,
  collapse = function(topic, o, cb)
    tf.collapse(topic.id, o, cb)
  end,
}

--- Runs `name` (drop, restore, pin, expand, collapse, preview) on the cursor's topic.
function M.action(name)
  local topic, list = M.current()
  if not topic then
    return
  end
  if name == 'preview' then
    return M.preview(topic.id, list.root)
  end
  ACTIONS[name](topic, { root = list.root }, function(err)
    if err then
      ui.error(err, name)
    end
    -- topicsChanged refreshes too; this one also covers an error (a topic merged away)
    M.refresh(list.root)
  end)
end

local HELP = {
  '<CR>/p  preview (summary and messages)',
  'd       drop: leaves the model context, nothing is deleted',
  'r       restore a dropped topic',
  'P       pin / unpin: always sent',
  'e       expand: the original messages instead of the summary',
  'c       collapse an expanded topic',
  'C       what the model sees next',
  'R       refresh        q  close',
}

--- Opens the topic list of the current buffer's root.
function M.open(opts)
  local root, err = tf.root(opts)
  if not root then
    return ui.error(err)
  end
  local client, start_err = server.ensure(root)
  if not client then
    return ui.error(server.error(start_err))
  end
  local buf, new = ui.scratch(list_name(root), root, 'topicforest-topics')
  lists[buf] = lists[buf] or { root = root, rows = {} }
  if new then
    vim.bo[buf].modifiable = false
    local keys = config.options.topics.keys
    for _, name in ipairs({ 'preview', 'drop', 'restore', 'pin', 'expand', 'collapse' }) do
      ui.map(buf, keys[name], function()
        M.action(name)
      end, 'Topic Forest: ' .. name)
    end
    ui.map(buf, keys.context, function()
      M.context({ root = root })
    end, 'Topic Forest: what the model sees')
    ui.map(buf, keys.refresh, function()
      M.refresh(root)
    end, 'Topic Forest: refresh')
    ui.map(buf, keys.close, '<cmd>close<CR>', 'Close')
    ui.map(buf, keys.help, function()
      ui.float('Topic Forest keys', HELP)
    end, 'Topic Forest: keys')
  end
  local win = ui.show(buf, config.options.topics.split)
  vim.wo[win].wrap = false
  vim.wo[win].cursorline = true
  M.refresh(root)
  return buf
end

-- -- What the model sees ----------------------------------------------------------------------

--- The context view's markdown (contextView.ts): token total, topics sent / left out, messages.
function M.context_lines(thread, render, topics)
  local titles, dropped = {}, {}
  for _, t in ipairs(topics) do
    titles[t.id] = t.title
    if t.dropped then
      table.insert(dropped, t.id)
    end
  end
  local function topic_line(id, extra)
    local title = vim.trim((titles[id] or '(not listed)'):gsub('[%s#`%[%]]+', ' '))
    return ('- Topic %d · %s%s'):format(id, title, extra or '')
  end
  local pct = render.budget > 0 and math.floor(100 * render.tokens / render.budget + 0.5) or 0
  local lines = {
    '# What the model sees',
    '',
    ('The history the next chat request of thread `%s` carries: **%d of %d tokens** (%d%%), %d messages.')
      :format(
      thread:gsub('`', ''),
      render.tokens,
      render.budget,
      pct,
      #render.messages
    ),
    'Your next message and any attachments come after it.',
    '',
  }
  if render.fallback then
    vim.list_extend(lines, {
      '_The topics did not fit: a flat summary of the earlier conversation stands in for them._',
      '',
    })
  end
  vim.list_extend(lines, { ('## Topics sent (%d)'):format(#render.topics), '' })
  for _, t in ipairs(render.topics) do
    table.insert(lines, topic_line(t.id, (' — %s, %d tokens'):format(ui.mode_meaning(t.mode), t.tokens)))
  end
  vim.list_extend(lines, { '', ('## Not sent: no room (%d)'):format(#render.omittedTopics), '' })
  for _, id in ipairs(render.omittedTopics) do
    table.insert(lines, topic_line(id))
  end
  if #dropped > 0 then
    vim.list_extend(lines, { '', ('## Dropped (%d)'):format(#dropped), '' })
    for _, id in ipairs(dropped) do
      table.insert(lines, topic_line(id))
    end
  end
  vim.list_extend(lines, { '', ('## Messages (%d)'):format(#render.messages), '' })
  for i, m in ipairs(render.messages) do
    vim.list_extend(lines, { ('### %d · %s'):format(i, m.role), '' })
    vim.list_extend(lines, ui.lines(ui.fence(m.content, 'text')))
    table.insert(lines, '')
  end
  return lines
end

local function fill_context(buf, root)
  local thread = tf.thread({ root = root })
  tf.render_context({ root = root }, function(err, render)
    if err then
      return ui.set_lines(buf, { 'Topic Forest: ' .. server.describe(err):gsub('\n', ' — ') })
    end
    tf.list_topics({ root = root }, function(err2, listed)
      if vim.api.nvim_buf_is_valid(buf) then
        ui.set_lines(buf, M.context_lines(thread, render, err2 and {} or listed.topics))
      end
    end)
  end)
end

--- Re-reads open context views of `root` (all without one).
function M.refresh_context(root)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    local own = vim.b[buf].topicforest_root
    if name:find('^topicforest://context/') and (root == nil or own == root) then
      fill_context(buf, own)
    end
  end
end

--- Opens "What the model sees" for the current thread of the root.
function M.context(opts)
  local root, err = tf.root(opts)
  if not root then
    return ui.error(err)
  end
  local buf, new = ui.scratch(context_name(root), root, 'markdown')
  if new then
    vim.bo[buf].modifiable = false
    ui.map(buf, 'q', '<cmd>close<CR>', 'Close')
  end
  ui.show(buf, 'botright split')
  fill_context(buf, root)
  return buf
end

-- every list and context view follows the server's changes, debounced per root
local queued = {}
table.insert(server.listeners.topicsChanged, function(_, root)
  if root and not queued[root] then
    queued[root] = true
    vim.defer_fn(function()
      queued[root] = nil
      M.refresh(root)
    end, 100)
  end
end)

return M
