-- :TopicForestThreads: pick a thread (or a new one), then open, rename or delete it, with
-- vim.ui.select / vim.ui.input (so any picker plugin that replaces them is used).
local tf = require('topicforest')
local ui = require('topicforest.ui')

local M = {}

local function chat()
  return require('topicforest.chat')
end

function M.label(thread, current)
  return ('%s %s · %d message%s · %s'):format(
    thread.threadId == current and '●' or ' ',
    ui.excerpt(thread.title ~= '' and thread.title or thread.threadId, 60),
    thread.messageCount,
    thread.messageCount == 1 and '' or 's',
    ui.time(thread.lastTime)
  )
end

--- Makes `thread` (nil: a new one) current and shows it in the chat.
function M.open(root, thread)
  if chat().busy(root) then
    return
  end
  tf.set_thread(thread, { root = root })
  chat().open({ root = root })
  chat().load(root)
  require('topicforest.topics').refresh(root) -- the budget shown is the thread's
end

local function rename(root, thread)
  vim.ui.input({ prompt = 'Rename thread: ', default = thread.title }, function(title)
    if not title or vim.trim(title) == '' then
      return
    end
    tf.rename_thread(thread.threadId, title, { root = root }, function(err)
      if err then
        ui.error(err, 'rename')
      end
    end)
  end)
end

local function delete(root, thread)
  local prompt = ('Delete "%s"? Its %d messages leave the store and every topic.'):format(
    ui.excerpt(thread.title, 40),
    thread.messageCount
  )
  vim.ui.select({ 'Delete', 'Cancel' }, { prompt = prompt }, function(choice)
    if choice ~= 'Delete' then
      return
    end
    tf.delete_thread(thread.threadId, { root = root }, function(err)
      if err then
        return ui.error(err, 'delete')
      end
      if thread.threadId == tf.thread({ root = root }) then
        tf.set_thread(nil, { root = root })
        chat().load(root)
      end
    end)
  end)
end

--- Lists the root's threads; the chosen one can be opened, renamed or deleted.
function M.pick(opts)
  local root, err = tf.root(opts)
  if not root then
    return ui.error(err)
  end
  tf.threads({ root = root }, function(list_err, result)
    if list_err then
      return ui.error(list_err, 'threads')
    end
    local current = tf.thread({ root = root })
    local items = { { new = true } }
    vim.list_extend(items, result.threads)
    vim.ui.select(items, {
      prompt = 'Topic Forest threads',
      format_item = function(item)
        return item.new and '+ New thread' or M.label(item, current)
      end,
    }, function(item)
      if not item then
        return
      elseif item.new then
        return M.open(root, nil)
      end
      vim.ui.select({ 'Open', 'Rename', 'Delete' }, { prompt = ui.excerpt(item.title, 60) }, function(action)
        if action == 'Open' then
          M.open(root, item.threadId)
        elseif action == 'Rename' then
          rename(root, item)
        elseif action == 'Delete' then
          delete(root, item)
        end
      end)
    end)
  end)
end

return M
