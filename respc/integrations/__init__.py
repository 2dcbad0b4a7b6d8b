"""Where serving engines call respc. Nothing here imports an engine: each integration module imports its
engine only when the engine loads it (`respc.integrations.vllm`, through vLLM's plugin entry point).

`respc.integrations.template` finds and compiles the template a served model gets; it needs no engine.
"""
