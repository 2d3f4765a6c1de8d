"""The fake API server's kubeconfig files: written for a test's clients, removed on exit.

Role: gives kubectl and every other kubeconfig reader a way in. Input is the server's URL,
its CA (with ``tls=True``), a bearer token and a namespace; output is a kubeconfig file
(one cluster, one user with the token, one current context in the namespace), readable by
its owner only, with the CA as ``certificate-authority-data`` when there is one. Every
file written is removed by :meth:`Kubeconfigs.remove_all`, which the server calls when it
stops serving.

Task model: synchronous file I/O in the caller's thread; a kubeconfig is a few hundred
bytes.
"""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from typing import Any

__all__ = ["Kubeconfigs", "kubeconfig"]


def kubeconfig(url: str, ca_pem: bytes | None, *, token: str, namespace: str) -> dict[str, Any]:
    """The kubeconfig document of a server at ``url``, trusting ``ca_pem`` when given."""
    cluster: dict[str, str] = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "aioinformer-fake", "cluster": cluster}],
        "users": [{"name": "aioinformer-fake-user", "user": {"token": token}}],
        "contexts": [
            {
                "name": "aioinformer-fake",
                "context": {
                    "cluster": "aioinformer-fake",
                    "user": "aioinformer-fake-user",
                    "namespace": namespace,
                },
            }
        ],
        "current-context": "aioinformer-fake",
        "preferences": {},
    }


class Kubeconfigs:
    """The kubeconfig files one server wrote; ``_paths`` holds each until it is removed."""

    def __init__(self) -> None:
        self._paths: list[str] = []

    def write(self, config: dict[str, Any], path: str | None) -> str:
        """Write ``config`` to ``path`` (a new temporary file when ``None``), readable by
        its owner only; return the path."""
        import yaml

        if path is None:
            fd, path = tempfile.mkstemp(prefix="aioinformer-kubeconfig-", suffix=".yaml")
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            # A file that was there keeps its mode through O_CREAT: it holds a token now.
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(config, handle, sort_keys=False)
        self._paths.append(path)
        return path

    def remove_all(self) -> None:
        """Remove every file written (one already gone is skipped)."""
        for path in self._paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._paths.clear()
