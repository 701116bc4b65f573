"""The workspace layer, between the store and the server: what one editor workspace does.

`memory.WorkspaceMemory` is the facade of topic verbs and queries the server calls. It is
composed of collaborators that receive their dependencies in their constructors and never
import it: `turn` (the chat turn and its send gate), `upkeep` (background rounds), `session`
(the store, or a null session when unstored), `models` (chat model and summarizers),
`events` (what the server hears). `registry` keeps one memory per folder, `settings` reads
the client's settings. Nothing here imports pygls or `topicforest.server`.
"""
