"""An S3 server for tests: moto's server (moto[server]) on 127.0.0.1, one bucket created.

Usage: moto_s3.py BUCKET [PORT]. Prints the port it listens on (PORT, or one the system chose)
on a line of its own once the bucket exists, then serves until its standard input closes or it
is killed. Everything is in memory: a restarted server starts empty (the bucket is made again).
"""

import sys

import boto3
from moto.server import ThreadedMotoServer


def main() -> None:
    bucket = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    s3 = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    s3.create_bucket(Bucket=bucket)
    print(port, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
