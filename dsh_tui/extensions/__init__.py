"""dsh_tui.extensions - the built-in plugins, one concept per package (dsh's shape: a package per feature).

Each package here is a built-in plugin (or two: ``titles``, ``skills``, ``hooks``) applied to an agent through
the table in ``dsh_tui.runtime.builtin_plugins`` (``"module:attribute"`` strings, imported only when the plugin
is applied), in the ``BUILTIN`` tier of the event bus, with the same ``Context`` user plugins get
(``dsh_tui.runtime.plugin_context``). The core (``dsh_tui.runtime``) never imports an extension; an extension
imports the core and the layers below it, never another extension (import-linter: the ``layers`` and
``independence`` contracts in pyproject.toml; the exceptions still listed there say why). The UI, the CLI and
the SDK may import extensions (e.g. the chat's ``@file`` completion, ``dsh-tui mcp``). Nothing is imported
here: importing one extension loads only it.

========================  =====================  =====================================================================
package                   built-in id(s)         what it is
========================  =====================  =====================================================================
``commands``              ``commands``           the built-in slash commands (``/compact``, ``/model``, ``/help`` …)
``compaction``            ``compaction``         automatic and ``/compact`` compaction (pre-step/request-error)
``filerefs``              ``file-reference``     ``@file`` mentions: the prompt section, the completion's index
``goals``                 ``goal``               the goal tools, ``/goal`` and goal rounds
``hooks``                 ``hooks-claude-code``, Claude Code's and Codex's shell hooks
                          ``hooks-codex``
``images``                ``images``             ``read_image`` and images in prompts
``instructions``          ``agent-instructions`` ``AGENTS.md`` and the project's instruction files
``jobs``                  ``jobs``               background jobs and ``job_output`` / ``job_list`` / ``job_kill``
``lsp``                   ``lsp``                the ``lsp`` tool and diagnostics after write/edit
``mcp``                   ``mcp``                MCP servers' tools, prompts and resources
``planmode``              ``plan-mode``          ``/plan`` and ``exit_plan_mode``
``privacy``               ``deepseek-extensions`` dsh 0.2's request fields, only when ``[privacy]`` opts in
``questions``             ``ask-user``           the ``ask_user_question`` tool
``ralph``                 ``ralph``              fresh-agent rounds (off by default)
``repeat``                ``repeat-tool-reminder`` dsh's loop guard
``retry``                 ``retry``              the retry of failed model requests
``skills``                ``skills``,            skills (``SKILL.md``), ``/<skill>`` and the ``skill`` tool
                          ``skill-tool``
``str_replace_editor``    ``str-replace-editor`` dsh 0.1's ``str_replace_editor`` (off by default)
``subagents``             ``subagents``          the subagent tools, the children and their watchers
``terminals``             ``terminals``          the ``terminal_*`` tools over persistent PTYs (off by default)
``titles``                ``session-title``,     session titles (fallback and model-made)
                          ``session-title-llm``
``undo``                  ``workspace-changes``  every turn's file changes snapshotted (``/undo``, ``/diff``)
``web``                   ``web``                ``web_search`` and ``web_fetch``
``workdir``               ``working-directory``  the ``working_directory`` tool
========================  =====================  =====================================================================

What stays in the core (``dsh_tui.runtime``) and why - each is used by every agent whatever plugins it has, or is
the seam plugins plug into:

========================  ==========================================================================================
module                    why it is core
========================  ==========================================================================================
``agent``                 the agent loop (turns, steps, the driver, maintenance)
``bus``                   the event bus and the event table every plugin listens on
``inbox``, ``scheduler``  what the agent runs next and when; tool calls' concurrency
``tools``                 the tool service (registration, execution, ``tools/*`` events)
``approval``,             presets, the approval waterfall, the permission rules a tool call is checked against
``permissions``
``signal``                cancellation (``AbortSignal``)
``prompt``,               system-prompt assembly (sections, ``system-prompt/assemble``) and the streamed blocks
``assembler``
``host``                  the agent host: a session, a provider, the plugins, one agent (the app and the SDK)
``listeners``             user listeners contained (timeouts, ``SystemExit``)
``options``, ``schema``   the options helper built-ins validate with; the JSON-schema checks of tool arguments
``plugins``,              what a plugin is, how it is found and loaded, its ``Context``, the built-ins' table, the
``plugin_context``,       plugin log
``builtin_plugins``,
``pluginlog``
``commands``              the slash-command registry every agent has and the types a plugin's command uses
                          (``CommandResult``, ``CommandError``); the built-in commands are the extension
``questions``             the user-questions seam (``ask``, ``QuestionCancelled``): the core's
                          ``user-questions/request`` event, which the ``ask-user`` tool and the plan review use
``sandboxing``            the OS sandbox the host runs commands in
``shellmode``             the composer's ``!command``: the user's own command, run by the host (not a plugin)
``turns``                 turn control read from the log (rewind points, the failed turn ``/retry`` resends)
========================  ==========================================================================================
"""
