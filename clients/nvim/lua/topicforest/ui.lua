-- Small helpers shared by the chat, the topic list, previews and the context view: text
-- formatting (the VS Code client's format.ts and topicTree.ts, in Lua), scratch buffers, errors.
local server = require('topicforest.server')

local M = {}

function M.compact_tokens(n)
  if n < 1000 then
    return tostring(n)
  end
  local k = n / 1000
  if k < 10 then
    return (('%.1f'):format(k):gsub('%.0$', '')) .. 'k'
  end
  return ('%dk'):format(math.floor(k + 0.5))
end

--- One line, at most `max` characters, whitespace collapsed.
function M.excerpt(text, max)
  max = max or 80
  local line = vim.trim((text or ''):gsub('%s+', ' '))
  if vim.fn.strchars(line) <= max then
    return line
  end
  return vim.fn.strcharpart(line, 0, max - 1) .. '…'
end

--- A fence longer than any backtick run inside `text`, so model text cannot close it.
function M.fence(text, info)
  local longest = 2
  for run in text:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  local ticks = ('`'):rep(longest + 1)
  return ticks .. (info or '') .. '\n' .. text .. '\n' .. ticks
end

function M.time(epoch)
  return os.date('!%Y-%m-%d %H:%M', math.floor(epoch or 0))
end

-- The render modes' short marks on a row and what they mean (topicTree.ts MODES).
M.MODES = {
  ['summary'] = { badge = '', meaning = 'its summary' },
  ['summary+messages'] = { badge = '+msgs', meaning = 'its summary plus the messages it does not cover yet' },
  ['messages'] = { badge = 'msgs', meaning = 'its messages (no summary yet)' },
  ['expanded'] = { badge = 'full', meaning = 'all its original messages (expanded)' },
  ['recalled'] = { badge = 'recall', meaning = 'exchanges recalled for the query' },
}

function M.mode_meaning(mode)
  return (M.MODES[mode] or {}).meaning or mode
end

--- Where each topic stands in the next request, from one listTopics result:
--- { kind = 'sent', mode, tokens, rank } | { kind = 'noRoom' | 'dropped' | 'notSent' }.
function M.placements(result)
  local sent, no_room, out = {}, {}, {}
  for rank, t in ipairs(result.rendered or {}) do
    sent[t.id] = { kind = 'sent', mode = t.mode, tokens = t.tokens, rank = rank }
  end
  for _, id in ipairs(result.omittedTopics or {}) do
    no_room[id] = true
  end
  for _, topic in ipairs(result.topics or {}) do
    out[topic.id] = topic.dropped and { kind = 'dropped' }
      or sent[topic.id]
      or (no_room[topic.id] and { kind = 'noRoom' })
      or { kind = 'notSent' }
  end
  return out
end

--- The row's short figure (the VS Code tree's description): cost and mode, or why it is out.
function M.figure(placement)
  if placement.kind == 'sent' then
    local badge = (M.MODES[placement.mode] or { badge = placement.mode }).badge
    return vim.trim(('%s tok %s'):format(M.compact_tokens(placement.tokens), badge))
  end
  return ({ noRoom = 'no room', dropped = 'dropped', notSent = 'not sent' })[placement.kind] or ''
end

function M.states(topic)
  local out = {}
  for _, key in ipairs({ 'dropped', 'pinned', 'expanded' }) do
    if topic[key] then
      table.insert(out, key)
    end
  end
  if topic.pending then
    table.insert(out, 'summary pending')
  end
  local recent = M.recent_reshape(topic)
  if recent then
    table.insert(out, recent)
  end
  return out
end

-- How new messages reshaped a topic (listTopics' `reshapes`, newest first), as the VS Code
-- client says it: no reshuffle of the memory is silent.
M.RECENT_SECONDS = 3600

local function other(note)
  local title = note.otherTitle ~= vim.NIL and note.otherTitle or nil
  return title and ('"' .. title:gsub('%s+', ' ') .. '"')
    or ('topic ' .. note.otherId)
end

local function count(n)
  return ('%d message%s'):format(n, n == 1 and '' or 's')
end

local RESHAPE_TEXT = {
  splitOff = function(n)
    return ('Split off %s (%s).'):format(other(n), count(n.messages))
  end,
  split = function(n)
    return ('%s of it were split off into %s.'):format(count(n.messages), other(n))
  end,
  merged = function(n)
    return ('%s was merged into it.'):format(other(n))
  end,
  movedIn = function(n)
    return ('%s moved in from %s.'):format(count(n.messages), other(n))
  end,
  movedOut = function(n)
    return ('%s moved to %s.'):format(count(n.messages), other(n))
  end,
}

--- Each recent change with its time.
function M.reshape_lines(topic)
  local out = {}
  for _, note in ipairs(topic.reshapes or {}) do
    local text = RESHAPE_TEXT[note.kind]
    if text then
      table.insert(out, M.time(note.at) .. ': ' .. text(note))
    end
  end
  return out
end

--- "split" or "merged" while the newest such change is under an hour old, else nil.
function M.recent_reshape(topic, now)
  for _, note in ipairs(topic.reshapes or {}) do
    if note.kind == 'splitOff' or note.kind == 'merged' then
      if (now or os.time()) - note.at <= M.RECENT_SECONDS then
        return note.kind == 'merged' and 'merged' or 'split'
      end
      return nil
    end
  end
  return nil
end

--- A scratch buffer (no file, wiped when hidden) named `name`, holding `root`.
function M.scratch(name, root, filetype)
  local existing = vim.fn.bufnr(name)
  if existing ~= -1 and vim.api.nvim_buf_is_valid(existing) then
    return existing, false
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype or 'markdown'
  vim.b[buf].topicforest_root = root
  return buf, true
end

--- Shows `buf` in a window made by `split` (reusing a window that already shows it).
function M.show(buf, split)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
    return win
  end
  vim.cmd(split)
  vim.api.nvim_win_set_buf(0, buf)
  return vim.api.nvim_get_current_win()
end

function M.set_lines(buf, lines)
  local modifiable = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = modifiable
end

--- Every line of a (possibly multi-line) text.
function M.lines(text)
  return vim.split(text or '', '\n', { plain = true })
end

--- A read-only markdown float (previews, help).
function M.float(title, lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  local width = math.max(40, math.min(100, vim.o.columns - 8))
  local height = math.max(5, math.min(#lines, vim.o.lines - 8))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = 'rounded',
    title = ' ' .. title .. ' ',
    style = 'minimal',
  })
  vim.wo[win].wrap = true
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', key, '<cmd>close<CR>', { buffer = buf, nowait = true, desc = 'Close' })
  end
  return buf, win
end

--- Shows an error from the server or the plugin as a notification (never an exception).
function M.error(err, what)
  local text = server.describe(err)
  vim.notify(('Topic Forest: %s%s'):format(what and (what .. ': ') or '', text), vim.log.levels.ERROR)
end

--- Maps `keys` (a key or a list of keys) in `buf`.
function M.map(buf, keys, fn, desc)
  for _, key in ipairs(type(keys) == 'table' and keys or { keys }) do
    vim.keymap.set('n', key, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
end

return M
