"""Agents: built-in rule-based and model-backed agents, and the loader for user agents."""

from __future__ import annotations

from groundeval.agents.base import AGENTS, Agent, AgentConfig, FunctionAgent, make_agent

__all__ = ["AGENTS", "Agent", "AgentConfig", "FunctionAgent", "make_agent"]
