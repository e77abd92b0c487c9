"""The pack's ComfyUI node classes: all that NODE_CLASS_MAPPINGS lists but the queue gate, which lives with
the queue-time check in server/. They ask the core and act on its answer; none computes a verdict or a
size of its own."""
