"""A: the completion without the shared read (each of the plan's source check, its startup-storage
check and the guard's address sweep gathers its own storage words, as in d647e9b); B: this
branch's completion (one SharedWords read right after vLLM's reload vouches for all three)."""
from vllm_integration import completion, session

shared = completion.complete


def alone(model, state, sess, mode, updated):
    return None if mode == "off" else completion._complete(model, state, sess, mode, updated)


def use(arm, plan, model):
    session.complete = alone if arm == "A" else shared
