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

`--lose-answers N:TEXT` (a test's adversary): the first N conditional creates (If-None-Match) of a
key containing TEXT are stored, then answered 500 InternalError, as a store whose answer was lost
after it wrote: the client retries a create that has in fact succeeded.
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


LOST_ANSWER = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
               b"<Message>We encountered an internal error. Please try again.</Message></Error>")


class AtomicObjectWrites:
    """WSGI middleware: a write to an object runs alone among writes to the same key."""

    def __init__(self, app, lose_answers: int = 0, lose_answers_of: str = ""):
        self.app = app
        self.locks = [threading.Lock() for _ in range(STRIPES)]
        self.lose_answers, self.lose_answers_of = lose_answers, lose_answers_of
        self.lost = threading.Lock()

    def _loses(self, environ, status: str) -> bool:
        """Whether this stored conditional create is answered 500 instead (--lose-answers)."""
        if not (self.lose_answers and "HTTP_IF_NONE_MATCH" in environ and status.startswith("200")
                and self.lose_answers_of in environ.get("PATH_INFO", "")):
            return False
        with self.lost:
            self.lose_answers -= 1
            return self.lose_answers >= 0

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") not in WRITES:
            return self.app(environ, start_response)
        # path-style requests: /bucket/key (the query string is not part of the key)
        key = environ.get("PATH_INFO", "")
        answered = {}

        def keep(status, headers, exc_info=None):
            answered.update(status=status, headers=headers)
            return lambda data: None

        with self.locks[zlib.crc32(key.encode("utf-8", "surrogateescape")) % STRIPES]:
            # moto stores the object while answering; the body is read here, under the lock too
            answer = self.app(environ, keep)
            try:
                body = b"".join(answer)
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        if self._loses(environ, answered["status"]):
            start_response("500 Internal Server Error", [("Content-Type", "application/xml"),
                                                         ("Content-Length", str(len(LOST_ANSWER)))])
            return [LOST_ANSWER]
        start_response(answered["status"], answered["headers"])
        return [body]


def main(argv: list[str] | None = None) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple

    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    # a test's way to make races between the server's threads show (sys.setswitchinterval)
    parser.add_argument("--switch-interval", type=float, default=None)
    parser.add_argument("--lose-answers", default="0:", help="N:TEXT, see the module's doc")
    args = parser.parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto.server sets it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # as moto.server runs it
    count, _, text = args.lose_answers.partition(":")
    run_simple(args.host, args.port, AtomicObjectWrites(app, int(count), text), threaded=True)


if __name__ == "__main__":
    main()
