-- Topic Forest's commands. Everything loads on first use; setup() is optional (defaults apply).
if vim.g.loaded_topicforest then
  return
end
vim.g.loaded_topicforest = true

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, vim.tbl_extend('force', { force = true }, opts or {}))
end

cmd('TopicForestChat', function()
  require('topicforest.chat').open()
end, { desc = 'Topic Forest: open the chat' })

cmd('TopicForestAsk', function(o)
  require('topicforest.chat').ask(o.line1, o.line2, o.args)
end, { range = true, nargs = '*', desc = 'Topic Forest: attach the selected lines (and ask)' })

cmd('TopicForestTopics', function()
  require('topicforest.topics').open()
end, { desc = 'Topic Forest: the topics in memory' })

cmd('TopicForestContext', function()
  require('topicforest.topics').context()
end, { desc = 'Topic Forest: what the model sees next' })

cmd('TopicForestThreads', function()
  require('topicforest.threads').pick()
end, { desc = 'Topic Forest: switch, rename or delete chat threads' })

cmd('TopicForestRestart', function()
  local _, err = require('topicforest').restart()
  if err then
    require('topicforest.ui').error(err, 'restart')
  end
end, { desc = "Topic Forest: restart the root's server" })

cmd('TopicForestLog', function()
  vim.cmd.tabnew(vim.fn.fnameescape(vim.lsp.get_log_path()))
end, { desc = "Topic Forest: Neovim's LSP log (the server's stderr and messages)" })

-- the active file ranks topics: the chat sends it, and a running server is told at once
vim.api.nvim_create_autocmd('BufEnter', {
  group = vim.api.nvim_create_augroup('topicforest', { clear = true }),
  callback = function(ev)
    if package.loaded['topicforest.chat'] then
      require('topicforest.chat').track(ev.buf)
    end
  end,
})
