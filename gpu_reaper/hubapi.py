"""The reaper's calls to its hub, with the service token JupyterHub hands a managed service
(`JUPYTERHUB_API_TOKEN`, `JUPYTERHUB_API_URL`). Its role (the chart's `hub.loadRoles`) grants only:

- `list:users`, `read:users`: `GET /users` with each user's `admin` flag and `groups` (exemptions);
- `read:servers`: the user model's `servers` (when each default server started, whether it is ready);
- `access:servers`: the learner's own Jupyter Server through the proxy: `GET /user/<name>/api/kernels`
  (`execution_state`) and the warning written with the Contents API;
- `delete:servers`: `DELETE /users/<name>/server`, which stops the server and keeps its home volume.

(JupyterHub 5.5.0 jupyterhub/scopes.py `scope_definitions`; apihandlers/users.py `UserServerAPIHandler.delete`
`@needs_scope('delete:servers')`.)
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

NOTICE_PATH = "GPU-SLOT-WILL-STOP.md"
SCOPES = ("list:users", "read:users", "read:servers", "access:servers", "delete:servers")
TIMEOUT_SECONDS = 10
PAGE_SIZE = 200


def notice_text(user: str, state: str, grace_minutes: int) -> str:
    return (
        "# Your GPU slot will be given back\n\n"
        f"Hello {user}: your notebook server holds a shared GPU but has not used it for a while ({state}).\n"
        f"It will be stopped in {grace_minutes} minutes so that another learner can use the GPU.\n\n"
        "- Run a cell that uses the GPU, or keep a cell running, and this notice is withdrawn.\n"
        "- Your files stay: your home folder is kept, and you can start the server again from the hub.\n"
    )


class Hub:
    """A small client of the hub's REST API and, through the proxy, of the learners' servers."""

    def __init__(self, api_url: str, token: str, servers_url: str, page_size: int = PAGE_SIZE) -> None:
        self.page_size = page_size
        self.api_url = api_url.rstrip("/")
        self.servers_url = servers_url.rstrip("/")
        self.token = token

    def _call(self, method: str, url: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            text = response.read()
        return json.loads(text) if text else None

    def _server(self, user: str, path: str) -> str:
        return f"{self.servers_url}/user/{urllib.parse.quote(user, safe='')}/{path}"

    def users(self) -> list[dict[str, Any]]:
        """Every user with a running server, page by page (JupyterHub 5 pages `GET /users`: 50 by default, at most
        200: `api_page_default_limit`, `api_page_max_limit`; `state=ready` keeps users whose server is up)."""
        users: list[dict[str, Any]] = []
        while True:
            query = urllib.parse.urlencode({"state": "ready", "offset": len(users), "limit": self.page_size})
            page = list(self._call("GET", f"{self.api_url}/users?{query}"))
            users += page
            if len(page) < self.page_size:
                return users

    def kernels(self, user: str) -> list[dict[str, Any]] | None:
        """The server's kernels, or None when it cannot be asked (then only the GPU signal counts)."""
        try:
            return list(self._call("GET", self._server(user, "api/kernels")))
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def warn(self, user: str, state: str, grace_minutes: int) -> None:
        """A Markdown file in the learner's home folder, shown by JupyterLab's file browser (Contents API)."""
        model = {"type": "file", "format": "text", "content": notice_text(user, state, grace_minutes)}
        self._call("PUT", self._server(user, f"api/contents/{NOTICE_PATH}"), model)

    def withdraw(self, user: str) -> None:
        with contextlib.suppress(urllib.error.URLError, OSError):
            self._call("DELETE", self._server(user, f"api/contents/{NOTICE_PATH}"))

    def stop(self, user: str) -> None:
        """Stop the default server; `remove` is not sent, so nothing of the user's is deleted."""
        try:
            self._call("DELETE", f"{self.api_url}/users/{urllib.parse.quote(user, safe='')}/server")
        except urllib.error.HTTPError as error:
            if error.code != 400:  # 400: the server is not running any more
                raise
