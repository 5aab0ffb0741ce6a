"""moto's S3 server, with each object's writes made atomic as S3 makes them.

    python -m spark_clustering_dev.s3_server -H 127.0.0.1 -p PORT

moto's server answers requests on threads, and its PUT checks a condition (`If-None-Match: *`,
`If-Match`) and then stores the object, two steps with nothing between them: two conditional
creates of one key that arrive together can both pass the check, and both writers are told they
created it (the last one's bytes stay). S3 decides such a race: one create wins, the other gets 412
(or 409). The package's table lease rests on exactly that (a generation file is created with
`If-None-Match: *`), and a test racing two writers for a lease saw both win on moto once in CI.
So every request that changes an object (PUT, POST, DELETE) runs under a lock of its key (striped:
requests for other keys mostly go on at once). Everything else is moto's server as
`python -m moto.server` runs it, its request log included.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import zlib

STRIPES = 64
WRITES = {"PUT", "POST", "DELETE"}


class AtomicObjectWrites:
    """WSGI middleware: a write to an object runs alone among writes to the same key."""

    def __init__(self, app):
        self.app = app
        self.locks = [threading.Lock() for _ in range(STRIPES)]

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") not in WRITES:
            return self.app(environ, start_response)
        # path-style requests: /bucket/key (the query string is not part of the key)
        key = environ.get("PATH_INFO", "")
        with self.locks[zlib.crc32(key.encode("utf-8", "surrogateescape")) % STRIPES]:
            # moto stores the object while answering; the body is read here, under the lock too
            answer = self.app(environ, start_response)
            try:
                return [b"".join(answer)]
            finally:
                if hasattr(answer, "close"):
                    answer.close()


def main(argv: list[str] | None = None) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple

    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    # a test's way to make races between the server's threads show (sys.setswitchinterval)
    parser.add_argument("--switch-interval", type=float, default=None)
    args = parser.parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto.server sets it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # as moto.server runs it
    run_simple(args.host, args.port, AtomicObjectWrites(app), threaded=True)


if __name__ == "__main__":
    main()
