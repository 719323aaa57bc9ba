"""Run a playbook's small Python check on the remote: `args` in, the `result` it sets out."""


def run(args):
    namespace = {"args": args.get("args") or {}, "result": None}
    exec(compile(args["code"], "<playbook check>", "exec"), namespace)
    return namespace["result"]
