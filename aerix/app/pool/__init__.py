"""The pool as the use cases hold it: open it, bind its members, close it (``pool_session``),
and the members a run uses (``BoundMembers``). Below every use case that generates, so the
request, the screen and the profile commands all reach the pool the same way."""
