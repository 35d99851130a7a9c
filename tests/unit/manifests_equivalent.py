#!/usr/bin/python3
"""Whether two renderings of stsresize's installation are the same installation.

    manifests_equivalent.py KUSTOMIZE_YAML HELM_YAML

Compares `kubectl kustomize deploy/overlays/...` with `helm template deploy/chart ...`: the same
objects (kind and name), each equal once what differs by design is set aside: labels and
annotations on objects and pod templates (Helm's carry the release), the
app.kubernetes.io/instance selector label Helm adds, the hash suffix kustomize gives the
ConfigMap's name, metadata.namespace (kustomize writes it, Helm leaves it to the install), runs
of white space inside strings (the YAML libraries of kubectl and Helm fold the more-indented
lines of the fence's `>-` CEL blocks differently; CEL ignores white space outside its string
literals, which hold none), and the Namespace object, which Helm leaves to `--create-namespace`. The
grants of every Role and ClusterRole are printed as (apiGroup, resource, verb) counts and
compared as sets too, so a difference in rights is named as such. Exit 0 when equivalent, 1
with a unified diff per differing object otherwise.
"""
import difflib
import re
import sys

import yaml

HASHED_CONFIGMAP = re.compile(r"^(.*-config)-[a-z0-9]{10}$")


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def strip_instance(value):
    """Drops Helm's app.kubernetes.io/instance label wherever labels are matched."""
    if isinstance(value, dict):
        return {k: strip_instance(v) for k, v in value.items() if k != "app.kubernetes.io/instance"}
    if isinstance(value, list):
        return [strip_instance(v) for v in value]
    return value


def unhash(value):
    """The ConfigMap's name without kustomize's hash; strings with white space collapsed."""
    if isinstance(value, dict):
        return {k: unhash(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unhash(v) for v in value]
    if isinstance(value, str):
        m = HASHED_CONFIGMAP.match(value)
        return m.group(1) if m else " ".join(value.split())
    return value


def normalize(obj):
    obj = unhash(strip_instance(obj))
    meta = obj.get("metadata", {})
    meta.pop("labels", None)
    meta.pop("annotations", None)
    meta.pop("namespace", None)
    template = obj.get("spec", {}).get("template", {}).get("metadata")
    if template is not None:
        template.pop("annotations", None)
    return obj


def grants(obj):
    out = set()
    for rule in obj.get("rules", []):
        for group in rule.get("apiGroups", [""]):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    out.add((group, resource, verb))
    return out


def main():
    kustomize, helm = (load(p) for p in sys.argv[1:3])
    kustomize = [d for d in kustomize if d.get("kind") != "Namespace"]
    key = lambda d: (d["kind"], unhash(d["metadata"]["name"]))
    left = {key(d): normalize(d) for d in kustomize}
    right = {key(d): normalize(d) for d in helm}
    failed = False
    for missing in sorted(left.keys() - right.keys()):
        print(f"only in the kustomize output: {missing[0]} {missing[1]}")
        failed = True
    for extra in sorted(right.keys() - left.keys()):
        print(f"only in the Helm output: {extra[0]} {extra[1]}")
        failed = True
    for k in sorted(left.keys() & right.keys()):
        if k[0] in ("Role", "ClusterRole"):
            a, b = grants(left[k]), grants(right[k])
            print(f"{k[0]} {k[1]}: {len(a)} grants in kustomize, {len(b)} in Helm"
                  + ("" if a == b else f"; only kustomize: {sorted(a - b)}; only Helm: {sorted(b - a)}"))
        if left[k] != right[k]:
            failed = True
            a = yaml.safe_dump(left[k], sort_keys=True).splitlines()
            b = yaml.safe_dump(right[k], sort_keys=True).splitlines()
            print(f"{k[0]} {k[1]} differs:")
            print("\n".join(difflib.unified_diff(a, b, "kustomize", "helm", lineterm="")))
    if not failed:
        print(f"equivalent: {len(left)} objects")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
