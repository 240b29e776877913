"""``GET /health`` on the real ``caldrix serve``: 200 with the members while the real pool
answers, 503 with the reason once it is gone, without the API key either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.caldrix.front_harness import scripted_front

pytestmark = [pytest.mark.e2e, pytest.mark.model]

KEY = "health-test-key"


def test_health_is_200_while_the_pool_answers_and_503_with_a_reason_once_it_is_gone(tmp_path: Path) -> None:
    with scripted_front(tmp_path, [], "--api-key", KEY) as (pool, front), front.client() as http:
        up = http.get("/health")
        assert up.status_code == 200, up.text
        assert up.json() == {"status": "ok", "members": [{"name": "main", "state": "ready"}]}
        assert http.head("/health").status_code == 200
        assert http.get("/v1/models").status_code == 401  # the other routes still want the key

        pool.stop()
        down = http.get("/health")
        assert down.status_code == 503, down.text
        body = down.json()
        assert body["status"] == "unavailable" and set(body) == {"status", "reason"}
        assert "the caldrix pool is not available" in body["reason"]
        assert str(pool.socket_path) in body["reason"]
        assert "\n" not in body["reason"]
        assert front.process.poll() is None  # the front goes on, and answers once a pool does
