"""How a headless request ends, for ``aerix -p`` and for each prompt of the stream-json input:
its result printed, or the one line an error before or around it makes (and, in the JSON
formats, an error result), with the session store's notices after either."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aerix.app.ports.request import RequestResult
from aerix.app.ports.stream import StreamOutput
from aerix.errors import AerixError, FileUnusable


async def reported(
    request: Callable[[], Awaitable[RequestResult]],
    output: StreamOutput,
    notices: Callable[[], Iterable[str]],
) -> int:
    """Run ``request``, print how it ended through ``output``; the exit code."""
    try:
        try:
            result = await request()
        except BrokenPipeError:
            raise  # a closed pipe is the CLI's to end quietly, not a store that cannot be used
        except OSError as os_error:  # the session store unusable (a file, no permission, full)
            raise FileUnusable(os_error) from os_error
    except AerixError as error:
        output.note(str(error))
        output.failed(str(error), error.exit_code, output.session or None)
        return error.exit_code
    finally:
        for notice in notices():
            output.note(notice)
    return output.finish(result)
