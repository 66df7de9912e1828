#!/bin/sh
# The tool's tests: each `check CAP ARGS EXPECTED` calls it as the model would, through
# `sluice call` with this directory's sluice.toml and a cap of CAP bytes on the observation,
# and compares the observation with EXPECTED, byte for byte. Build first (`sluice build`);
# SLUICE names the sluice binary (default: sluice on PATH). Add a check for each case you
# handle; `sluice call` prints the observation to paste.
set -u
cd "$(dirname "$0")"
sluice="${SLUICE:-sluice}"
failed=0

check() {
  got="$("$sluice" --config sluice.toml --max-tool-result-bytes "$1" call {{name_snake}} "$2")"
  if [ "$got" = "$3" ]; then
    echo "ok: $2 (cap $1)"
  else
    printf 'FAILED: %s (cap %s)\n  expected: %s\n  got:      %s\n' "$2" "$1" "$3" "$got"
    failed=1
  fi
}

# The whole sample fits one page under the default cap.
check 65536 '{"path":"/data/notes.txt"}' \
  '{"ok":true,"result":{"path":"/data/notes.txt","lines":["Sluice calls this tool with a path under a granted root.","The policy in sluice.toml grants sample/ as the root `data`, mounted at /data.","Each call returns as many whole lines as fit the page budget.","The host sets that budget from the cap on one observation:","half the cap, less room for the path and the envelope.","When the file has more, the page ends with nextCursor,","the byte offset where the next page starts.","Pass it back as `cursor` to read on.","With the default cap (65,536 bytes) this file fits one page.","With --max-tool-result-bytes 1024 it takes two.","","A tab:\there, and some UTF-8: ünïcödé ✓","A line longer than a page is a page-too-small error.","The end."]}}'

# Under a cap of 1024 bytes the page is 512: two pages, joined by the cursor.
check 1024 '{"path":"/data/notes.txt"}' \
  '{"ok":true,"result":{"path":"/data/notes.txt","lines":["Sluice calls this tool with a path under a granted root.","The policy in sluice.toml grants sample/ as the root `data`, mounted at /data.","Each call returns as many whole lines as fit the page budget.","The host sets that budget from the cap on one observation:","half the cap, less room for the path and the envelope.","When the file has more, the page ends with nextCursor,","the byte offset where the next page starts.","Pass it back as `cursor` to read on."],"nextCursor":448}}'
check 1024 '{"path":"/data/notes.txt","cursor":448}' \
  '{"ok":true,"result":{"path":"/data/notes.txt","lines":["With the default cap (65,536 bytes) this file fits one page.","With --max-tool-result-bytes 1024 it takes two.","","A tab:\there, and some UTF-8: ünïcödé ✓","A line longer than a page is a page-too-small error.","The end."]}}'

# Errors: what was wrong, and what to do.
check 65536 '{"path":"/data/nope.txt"}' \
  '{"ok":false,"error":"no such file or directory: /data/nope.txt","kind":"not-found"}'
check 65536 '{"path":"/data"}' \
  '{"ok":false,"error":"/data is a directory; give the path of a text file","kind":"wrong-kind"}'
check 65536 '{"path":"/data/notes.txt","cursor":100000}' \
  '{"ok":false,"error":"cursor 100000 is past the end of /data/notes.txt (665 bytes); pass the nextCursor of a page, or leave cursor out to start at the beginning","kind":"invalid-argument"}'

exit $failed
