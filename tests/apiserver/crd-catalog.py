"""Writes a CRD JSON Schema catalog from CustomResourceDefinition manifests.

    python crd-catalog.py OUT CRD_FILE...

Each served version of each CRD becomes OUT/<group>/<kind>_<version>.json
(kind in lower case), the layout kubeconform's schema locations and the
tests read. The schema is the version's openAPIV3Schema, made strict as a
catalog for validation is: every object that lists `properties` and says
nothing of other keys refuses them (`additionalProperties: false`), except
the root, whose `metadata` the API server defines. Kubernetes' own
extensions (`x-kubernetes-*`) stay; a JSON Schema validator ignores them.

The tests run with this catalog when no catalog lies beside the repository;
.ci/run makes it from the CRDs it downloads for the API server tests.
"""

import json
import os
import sys

import yaml


def strict(node, root):
    """Adds `additionalProperties: false` below the root, in place."""
    if isinstance(node, dict):
        if (
            not root
            and "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        for key, value in node.items():
            if key in ("properties", "patternProperties", "definitions"):
                for child in value.values():
                    strict(child, False)
            elif key == "enum" or key == "default" or key == "example":
                continue
            else:
                strict(value, False)
    elif isinstance(node, list):
        for item in node:
            strict(item, False)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out, files = argv[1], argv[2:]
    written = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            documents = [d for d in yaml.safe_load_all(f) if d]
        for crd in documents:
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            group, kind = spec["group"], spec["names"]["kind"].lower()
            for version in spec.get("versions", []):
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if not schema or not version.get("served", True):
                    continue
                strict(schema, True)
                folder = os.path.join(out, group)
                os.makedirs(folder, exist_ok=True)
                target = os.path.join(folder, f"{kind}_{version['name']}.json")
                with open(target, "w", encoding="utf-8") as f:
                    json.dump(schema, f, indent=2, sort_keys=True)
                    f.write("\n")
                written += 1
    if written == 0:
        print(f"error: no CRD schema in {' '.join(files)}", file=sys.stderr)
        return 1
    print(f"{written} CRD schemas written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
