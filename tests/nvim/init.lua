-- The tests' minimal init: the plugin from this checkout on the runtimepath (its plugin/ file
-- loads as in a real install), and every vim.notify recorded for assertions.
vim.opt.runtimepath:prepend(vim.env.TOPICFOREST_NVIM_PLUGIN)
vim.o.columns = 160
vim.o.lines = 50

_G.notes = {}
vim.notify = function(message, level)
  table.insert(_G.notes, { message = tostring(message), level = level or vim.log.levels.INFO })
end
