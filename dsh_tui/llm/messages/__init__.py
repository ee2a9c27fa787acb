"""The Anthropic Messages provider (dsh 0.2's route to DeepSeek).

``serialize`` (request body and replay state) · ``translate`` (events → ``StreamChunk``) · ``errors``
(failure classification) · ``provider`` (``MessagesProvider``, built on the chat-completions client).
"""

from dsh_tui.llm.messages.provider import MessagesProvider, messages_root
from dsh_tui.llm.messages.serialize import serialize_request
from dsh_tui.llm.messages.translate import MessagesTranslator

__all__ = ["MessagesProvider", "MessagesTranslator", "messages_root", "serialize_request"]
