#!/usr/bin/env python3
"""Developer helper: edit notebook cells in place, keeping ids and metadata (nbdev_clean normalises the rest).

  python tools/nbcell.py list NB [PATTERN]          cells: id, type, first line (only cells containing PATTERN)
  python tools/nbcell.py get NB ID                  print a cell's source
  python tools/nbcell.py set NB ID FILE             replace a cell's source by FILE's text ('-' = stdin)
  python tools/nbcell.py add NB AFTER_ID TYPE FILE  insert a new code|markdown cell after AFTER_ID ('top' = first)
  python tools/nbcell.py sub NB OLDFILE NEWFILE     replace the one occurrence of OLDFILE's text in any cell
  python tools/nbcell.py rm NB ID                   delete a cell
"""
import json, secrets, sys


def load(p): return json.load(open(p, encoding="utf-8"))


def save(p, nb):
    with open(p, "w", encoding="utf-8") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False); f.write("\n")


def src(c): return "".join(c["source"])


def lines(s): return s.splitlines(keepends=True)


def text(f): return sys.stdin.read() if f == "-" else open(f, encoding="utf-8").read()


def find(nb, cid):
    for i, c in enumerate(nb["cells"]):
        if c.get("id") == cid: return i
    sys.exit(f"no cell with id {cid}")


def main(a):
    cmd, p = a[0], a[1]
    nb = load(p)
    if cmd == "list":
        for c in nb["cells"]:
            s = src(c)
            if len(a) < 3 or a[2] in s:
                print(c.get("id"), c["cell_type"][:4], s.splitlines()[0][:110] if s else "")
    elif cmd == "get":
        print(src(nb["cells"][find(nb, a[2])]), end="")
    elif cmd == "set":
        nb["cells"][find(nb, a[2])]["source"] = lines(text(a[3]).rstrip("\n")); save(p, nb)
    elif cmd == "add":
        i = -1 if a[2] == "top" else find(nb, a[2])
        cid = secrets.token_hex(4)
        cell = {"cell_type": a[3], "id": cid, "metadata": {}, "source": lines(text(a[4]).rstrip("\n"))}
        if a[3] == "code": cell.update(execution_count=None, outputs=[])
        nb["cells"].insert(i + 1, cell); save(p, nb); print(cid)
    elif cmd == "sub":
        old, new = text(a[2]), text(a[3])
        hits = [c for c in nb["cells"] if old in src(c)]
        if len(hits) != 1: sys.exit(f"{len(hits)} cells contain the text (need exactly 1)")
        hits[0]["source"] = lines(src(hits[0]).replace(old, new, 1)); save(p, nb)
    elif cmd == "rm":
        del nb["cells"][find(nb, a[2])]; save(p, nb)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:]) if len(sys.argv) > 2 else sys.exit(__doc__)
