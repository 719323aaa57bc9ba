"""Findings: the unit every check reports, as plain JSON-ready dicts.

A finding is {"id", "severity", "title", "detail", "evidence"}: `id` is stable kebab-case (users
grep for it in CI), `severity` is one of SEVERITIES, `evidence` maps a label to a JSON value
(file:line, tensor values, config fields) so a person can check the claim.
"""

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


def finding(finding_id, severity, title, detail="", evidence=None):
    if severity not in SEVERITIES:
        raise ValueError("unknown severity %r" % (severity,))
    return {
        "id": finding_id,
        "severity": severity,
        "title": title,
        "detail": detail,
        "evidence": dict(evidence or {}),
    }


def has_errors(findings):
    return any(f["severity"] == ERROR for f in findings)
