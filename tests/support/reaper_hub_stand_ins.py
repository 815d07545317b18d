"""Stand-ins a real JupyterHub 5.5.0 loads in the reaper's end-to-end test (tests/gpu_reaper/test_gpu_reaper_hub.py).

- `RoutingProxy`: a JupyterHub `Proxy` (jupyterhub/proxy.py: `add_route`, `delete_route`, `get_all_routes`)
  that keeps its routes in memory and forwards HTTP by the longest matching route, inside the hub's own event
  loop: no configurable-http-proxy, so no npm.
- `StandInSpawner`: LocalProcessSpawner without the switch to a system user, starting `serve_stand_in`.
- `serve_stand_in` (run as `python -m tests.support.reaper_hub_stand_ins`): a learner's server, reduced to what the
  reaper calls: `GET api/kernels` and the Contents API's PUT/DELETE of the notice, each token checked with the
  hub (`GET /hub/api/user`, the server needing the `access:servers` scope as jupyterhub-singleuser does).
"""

from __future__ import annotations

import json
import os
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jupyterhub.proxy import Proxy
from jupyterhub.spawner import LocalProcessSpawner
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.httpserver import HTTPServer


class RoutingProxy(Proxy):
    routes: dict[str, dict[str, Any]]

    async def start(self) -> None:
        self.routes = {}
        proxy = self
        port = int(os.environ["STAND_IN_PROXY_PORT"])

        class Forward(web.RequestHandler):
            SUPPORTED_METHODS = ("GET", "PUT", "POST", "DELETE", "PATCH")

            async def _forward(self) -> None:
                path = self.request.uri or "/"
                spec = max((s for s in proxy.routes if path.startswith(s) or path + "/" == s), key=len, default=None)
                if spec is None:
                    raise web.HTTPError(404)
                target = proxy.routes[spec]["target"].rstrip("/") + path
                body = self.request.body if self.request.method in ("PUT", "POST", "PATCH") else None
                headers = {k: v for k, v in self.request.headers.items() if k.lower() != "host"}
                request = HTTPRequest(target, method=self.request.method or "GET", headers=headers, body=body,
                                      allow_nonstandard_methods=True, follow_redirects=False)  # fmt: skip
                try:
                    response = await AsyncHTTPClient().fetch(request)
                except HTTPClientError as error:
                    if error.response is None:
                        raise
                    response = error.response
                self.set_status(response.code)
                self.finish(response.body or b"")

            get = put = post = delete = patch = _forward

        self.server = HTTPServer(web.Application([(r".*", Forward)]))
        self.server.listen(port, "127.0.0.1")

    async def stop(self) -> None:
        self.server.stop()

    async def add_route(self, routespec: str, target: str, data: dict[str, Any]) -> None:
        self.routes[routespec] = {"routespec": routespec, "target": target, "data": data}

    async def delete_route(self, routespec: str) -> None:
        self.routes.pop(routespec, None)

    async def get_all_routes(self) -> dict[str, dict[str, Any]]:
        return dict(getattr(self, "routes", {}))


class StandInSpawner(LocalProcessSpawner):
    def make_preexec_fn(self, name: str) -> None:
        return None

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        return env

    def get_env(self) -> dict[str, str]:
        env: dict[str, str] = super().get_env()
        env["STAND_IN_STATE_DIR"] = os.environ["STAND_IN_STATE_DIR"]
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env


def serve_stand_in() -> None:
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    user = os.environ["JUPYTERHUB_USER"]
    api_url = os.environ["JUPYTERHUB_API_URL"]
    state = Path(os.environ["STAND_IN_STATE_DIR"])
    kernel_state = "busy" if (state / f"{user}.kernel-busy").exists() else "idle"

    class Handler(BaseHTTPRequestHandler):
        def _allowed(self) -> bool:
            token = self.headers.get("Authorization", "")
            request = urllib.request.Request(f"{api_url}/user", headers={"Authorization": token})
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    model = json.loads(response.read())
            except OSError:
                return False
            return bool({"access:servers", f"access:servers!user={user}"} & set(model.get("scopes", [])))

        def _answer(self, code: int, body: Any = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.startswith(f"{prefix}api/kernels"):
                if not self._allowed():
                    return self._answer(403)
                return self._answer(200, [{"id": "k1", "name": "python3", "execution_state": kernel_state}])
            return self._answer(200, {"server": user})

        def do_PUT(self) -> None:
            if not self.path.startswith(f"{prefix}api/contents/") or not self._allowed():
                return self._answer(403)
            model = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            (state / f"{user}.notice.md").write_text(model["content"])
            return self._answer(201, {"path": self.path.rsplit("/", 1)[1]})

        def do_DELETE(self) -> None:
            if not self._allowed():
                return self._answer(403)
            (state / f"{user}.notice.md").unlink(missing_ok=True)
            return self._answer(204)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", int(os.environ["JUPYTERHUB_SERVICE_URL"].rsplit(":", 1)[1].split("/")[0])),
                        Handler).serve_forever()  # fmt: skip


if __name__ == "__main__":
    serve_stand_in()
