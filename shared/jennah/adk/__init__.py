"""Jennah for google-adk (`pip install jennah-memory[adk]`): a memory service and the brief.

    from jennah.adk import JennahMemoryService, LoadBriefTool

    memory = JennahMemoryService()            # was: InMemoryMemoryService()
    agent = Agent(..., tools=[load_memory, LoadBriefTool(memory)])
    runner = Runner(agent=agent, app_name="app", session_service=..., memory_service=memory)

A client of the HTTP API like jennah.cli: it never imports services, adapters or the
composition root.
"""

from jennah.adk.brief import LoadBriefTool
from jennah.adk.memory import JennahMemoryService

__all__ = ["JennahMemoryService", "LoadBriefTool"]
