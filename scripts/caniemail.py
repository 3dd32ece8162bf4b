#!/usr/bin/env python3
"""Regenerate Catchbox's copy of the caniemail data set.

Usage: scripts/caniemail.py /path/to/caniemail-checkout [output-dir]

Reads the feature files (_features/*.md, YAML front matter) and the display
names (_data/nicenames.yml) of a checkout of the caniemail repository and
writes, into output-dir (default internal/htmlcheck/caniemail):

  data.json  a compact copy: for each feature its slug, title, category,
             notes and, for each client (family.platform), the support
             found by the client's latest test as the file lists it;
  LICENSE    the data set's licence, copied from the checkout.

data.json records the checkout's commit and its date. Needs python3 and
PyYAML (Debian: python3-yaml) and git.
"""

import json
import os
import shutil
import subprocess
import sys

import yaml


def front_matter(path):
    """The YAML front matter of a Jekyll file, tabs made spaces (the files
    indent with tabs inside flow mappings, which PyYAML refuses)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if not lines or lines[0].strip() != "---":
        raise ValueError(f"{path}: no front matter")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return yaml.safe_load("\n".join(lines[1:i]).replace("\t", "    "))
    raise ValueError(f"{path}: front matter not closed")


def support(value):
    """A support value as the data set writes it ("y", "a #1 #2", "n #3"),
    with its whitespace tidied; "" when unknown."""
    parts = str(value).split()
    if not parts or parts[0] not in ("y", "a", "n", "u"):
        return ""
    if parts[0] == "u":
        return ""
    return " ".join(parts)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(here, "..", "internal", "htmlcheck", "caniemail")
    commit = subprocess.check_output(["git", "-C", src, "rev-parse", "HEAD"], text=True).strip()
    date = subprocess.check_output(["git", "-C", src, "log", "-1", "--format=%cs"], text=True).strip()
    with open(os.path.join(src, "_data", "nicenames.yml"), encoding="utf-8") as f:
        nice = yaml.safe_load(f)

    features = []
    clients = []
    fdir = os.path.join(src, "_features")
    for name in sorted(os.listdir(fdir)):
        if not name.endswith(".md") or name.startswith("_"):
            continue
        d = front_matter(os.path.join(fdir, name))
        stats = {}
        for family, platforms in (d.get("stats") or {}).items():
            for platform, versions in (platforms or {}).items():
                if not versions:
                    continue
                # The versions are listed oldest first: the last is the
                # client as it is now.
                latest = support(list(versions.values())[-1])
                if latest:
                    client = f"{family}.{platform}"
                    stats[client] = latest
                    if client not in clients:
                        clients.append(client)
        notes = {str(k): str(v).strip() for k, v in (d.get("notes_by_num") or {}).items()}
        features.append({
            "slug": name[:-3],
            "title": str(d["title"]).strip(),
            "category": d["category"],
            "last_test_date": str(d.get("last_test_date") or ""),
            "note": str(d.get("notes") or "").strip(),
            "notes": notes,
            "stats": stats,
        })

    clients.sort()
    for f in features:
        s = f.pop("stats")
        f["support"] = [s.get(c, "") for c in clients]
        if not f["note"]:
            del f["note"]
        if not f["notes"]:
            del f["notes"]

    data = {
        "source": "https://github.com/hteumeuleu/caniemail",
        "commit": commit,
        "date": date,
        "licence": "MIT",
        "families": nice["family"],
        "platforms": nice["platform"],
        "clients": clients,
        "features": features,
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "data.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    shutil.copyfile(os.path.join(src, "LICENSE"), os.path.join(out, "LICENSE"))
    print(f"{len(features)} features, {len(clients)} clients, commit {commit} ({date})")


if __name__ == "__main__":
    main()
