"""Find SGLang/vLLM installs on this machine and collect their draft-model sources, read-only.

One round trip: `scan(args)` returns every install found (site-packages of candidate interpreters,
source checkouts found by a bounded walk, user-given roots, installs used by running servers) with
its version, how it was found, the pids of servers using it, the draft-model files of its models
directory (source text included, capped) and its speculative-decoding worker files (paths only).

All engine knowledge (directory layout, file name patterns, content markers, search roots) comes
in `args["knowledge"]` (see remotedbg/engines/knowledge.py); this module is only the mechanism.
No interpreter is started: site-packages directories are located on disk.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import sys
import time

from remotedbg.agent.containers import (
    container_info,
    container_place,
    host_path,
    process_uid,
    real_path,
)
from remotedbg.agent.engine_process import (
    ENGINE,
    SERVER_WRAPPERS,
    ancestors,
    interpreter_target,
    process_role,
)
from remotedbg.agent.file_stamp import add_file
from remotedbg.agent.redact import redact_argv, redact_cmdline

# Column 0 only: an indented `__version__ = "0.0.0.dev0"` is a fallback inside try/except
# (SGLang 0.5.14+ version.py), not the release's version.
_VERSION_RE = re.compile(r"""(?m)^__version__\s*(?::[^=\n]+)?=\s*(?:\w+\s*=\s*)*["']([^"']+)["']""")
_PYPROJECT_VERSION_RE = re.compile(r"""(?m)^\s*version\s*=\s*["']([^"']+)["']""")
_METADATA_VERSION_RE = re.compile(r"(?m)^Version:\s*(\S+)")
_METADATA_NAME_RE = re.compile(r"(?m)^Name:\s*(\S+)")
# a version that is no release: a development or local build (PEP 440 `.dev`, `+local`)
_DEV_VERSION_RE = re.compile(r"(?:\.?dev\d*|\+)")
_MAX_LISTED_FILES = 2000
_MAX_PLUGIN_NAMED = 64  # files a plugin's registration names, read at most


class _Budget(object):
    """Entry and time limits shared by every walk of one scan."""

    def __init__(self, max_entries, time_limit):
        self.max_entries = max_entries
        self.deadline = time.time() + time_limit
        self.entries = 0
        self.truncated = False

    def spend(self, n=1):
        self.entries += n
        if self.entries > self.max_entries or time.time() > self.deadline:
            self.truncated = True
        return not self.truncated


class _Scan(object):
    def __init__(self, args):
        knowledge = args.get("knowledge")
        if not isinstance(knowledge, dict) or "engines" not in knowledge:
            raise ValueError("args['knowledge'] is required (remotedbg.engines.knowledge)")
        self.k = knowledge
        self.engines = knowledge["engines"]
        self.home = args.get("home") or os.path.expanduser("~")
        self.max_depth = int(args.get("max_depth") or 4)
        self.max_file_bytes = int(args.get("max_file_bytes") or 512 * 1024)
        self.total_left = int(args.get("max_total_bytes") or 6 * 1024 * 1024)
        self.hashes_first = bool(args.get("hashes_first"))
        self.draft_stamps = args.get("draft_stamps") or {}  # install -> its models dirs' stamp
        self.budget = _Budget(
            int(args.get("max_entries") or 200000), float(args.get("time_limit") or 3.0)
        )
        self.skip_dirs = set(knowledge.get("skip_dirs") or [])
        self._listings = {}  # site-packages dir -> its (entry, lower-cased) names, read once
        self.skip_paths = set(knowledge.get("skip_paths") or [])
        self.hidden_allowed = set(knowledge.get("hidden_dirs_allowed") or [])
        # once named roots are in, no other install is added: servers are linked to those only
        self.closed = False
        self.installs = {}  # realpath of package dir -> install dict
        self.order = []
        self.searched = []
        self.errors = []
        self.interpreters = []  # {"python", "prefix", "how_found", "site_packages"}
        self.processes = []
        self._seen_sites = {}
        self._name_res = {}
        self._marker_res = {}
        for name, eng in self.engines.items():
            self._name_res[name] = [re.compile(p) for p in eng.get("name_patterns") or []]
            self._marker_res[name] = [re.compile(p) for p in eng.get("content_markers") or []]

    # ----------------------------------------------------------------- helpers
    def expand(self, pattern):
        if pattern == "~" or pattern.startswith("~/"):
            pattern = self.home + pattern[1:]
        return pattern

    def note(self, place):
        if place not in self.searched:
            self.searched.append(place)

    def engine_of(self, path):
        """The engine whose package `path` is (a dir named like the package, with its markers)."""
        base = os.path.basename(path.rstrip("/"))
        for name, eng in self.engines.items():
            if base != eng["package"]:
                continue
            for marker in eng.get("package_markers") or []:
                if os.path.isdir(os.path.join(path, marker)):
                    return name
        return None

    def add_install(self, path, engine, how, kind, site=None):
        real = real_path(path)
        inst = self.installs.get(real)
        if inst is None and self.closed:
            return None
        if inst is None:
            inst = {
                "engine": engine,
                "path": real,
                "found_at": path,
                "kind": kind,
                "site_packages": site,
                "how_found": [],
                "running": [],
            }
            self.installs[real] = inst
            self.order.append(real)
        elif kind == "site-packages" and inst["kind"] != "site-packages" and site:
            inst["site_packages"] = inst["site_packages"] or site
        if how not in inst["how_found"]:
            inst["how_found"].append(how)
        return inst

    # ------------------------------------------------------- site-packages
    def check_site(self, site, how):
        """Engine packages in one site-packages dir (plain, or editable via dist-info/.pth)."""
        found = []
        if not os.path.isdir(site):
            return found
        self.note(site)
        for name, eng in self.engines.items():
            pkg = os.path.join(site, eng["package"])
            if self.engine_of(pkg) == name:
                inst = self.add_install(pkg, name, how, "site-packages", site)
                if inst is not None:
                    found.append(inst)
                continue
            for target in self._editable_targets(site, eng):
                if self.engine_of(target) == name:
                    inst = self.add_install(target, name, how, "checkout", site)
                    if inst is not None:
                        inst["editable_from"] = site
                        found.append(inst)
        return found

    def _editable_targets(self, site, eng):
        targets = []
        names = self._listings.get(site)
        if names is None:  # once per scan, not once per engine
            try:
                names = [(entry, entry.lower()) for entry in os.listdir(site)]
            except OSError:
                names = []
            self._listings[site] = names
        prefixes = tuple(d.lower() + "-" for d in eng.get("dist_names") or [])
        for entry, low in names:
            if low.endswith(".dist-info") and low.startswith(prefixes):
                text = _read_text(os.path.join(site, entry, "direct_url.json"), 65536)
                m = re.search(r'"url"\s*:\s*"file://([^"]+)"', text or "")
                if m:
                    root = m.group(1)
                    targets.append(os.path.join(root, eng["package"]))
                    targets.append(os.path.join(root, "python", eng["package"]))
            elif low.endswith(".pth") and eng["package"] in low:
                text = _read_text(os.path.join(site, entry), 65536) or ""
                for line in text.splitlines():
                    line = line.strip()
                    if line.startswith("/") and not line.startswith("import"):
                        targets.append(os.path.join(line, eng["package"]))
        return targets

    def check_prefix(self, prefix, how_label):
        """A Python prefix (venv, conda env, /usr): check its site-packages; return the installs."""
        key = real_path(prefix) + "|" + prefix
        interp = self._seen_sites.get(key)
        if interp is None:
            if not os.path.isdir(prefix):
                return []
            python = None
            for cand in ("bin/python3", "bin/python"):
                p = os.path.join(prefix, cand)
                if os.path.exists(p):
                    python = p
                    break
            sites = []
            for sub in self.k.get("site_packages_globs") or []:
                for site in sorted(glob.glob(os.path.join(prefix, sub))):
                    if site not in sites:
                        sites.append(site)
            interp = {
                "python": python,
                "prefix": prefix,
                "how_found": [how_label],
                "site_packages": sites,
            }
            self._seen_sites[key] = interp
            if sites:
                self.interpreters.append(interp)
        elif how_label not in interp["how_found"]:
            interp["how_found"].append(how_label)
        found = []
        who = interp["python"] or interp["prefix"]
        for site in interp["site_packages"]:
            found.extend(self.check_site(site, "site-packages:" + who))
        return found

    def check_python(self, python, how_label):
        """An interpreter or script path: the prefixes of the path as given and as resolved."""
        prefixes = []
        for p in (python, real_path(python)):
            if os.path.basename(os.path.dirname(p)) != "bin":
                continue
            prefix = os.path.dirname(os.path.dirname(p))
            if prefix and prefix not in prefixes:
                prefixes.append(prefix)
        found = []
        for prefix in prefixes:
            found.extend(self.check_prefix(prefix, how_label))
        return found

    # ------------------------------------------------------------- walking
    def walk(self, root, how, depth):
        """Bounded breadth-first walk for engine packages; never enters a found package."""
        root = os.path.abspath(root)
        if not os.path.isdir(root):
            return
        self.note(root)
        level = [root]
        for d in range(depth + 1):
            nxt = []
            for path in level:
                if not self.budget.spend():
                    return
                engine = self.engine_of(path)
                if engine:
                    self.add_install(path, engine, how, self._kind_of(path))
                    continue
                base = os.path.basename(path)
                if base in ("site-packages", "dist-packages"):
                    self.check_site(path, _site_label(path))
                    continue
                if d == depth:
                    continue
                try:
                    it = os.scandir(path)
                except OSError:
                    continue
                with it:
                    for entry in it:
                        if not self.budget.spend():
                            return
                        name = entry.name
                        try:
                            if not entry.is_dir(follow_symlinks=False):
                                continue
                        except OSError:
                            continue
                        if name in ("site-packages", "dist-packages"):
                            self.check_site(entry.path, _site_label(entry.path))
                            continue
                        if name in self.skip_dirs or entry.path in self.skip_paths:
                            continue
                        if name.startswith(".") and name not in self.hidden_allowed:
                            continue
                        nxt.append(entry.path)
            level = nxt
            if not level:
                return

    def _kind_of(self, path):
        parent = os.path.basename(os.path.dirname(path))
        return "site-packages" if parent in ("site-packages", "dist-packages") else "checkout"

    # ----------------------------------------------------------- processes
    def scan_processes(self):
        self.note("/proc/*/cmdline")
        patterns = dict((name, eng.get("process_patterns") or [])
                        for name, eng in self.engines.items())  # fmt: skip
        wrappers = tuple(self.k.get("server_wrappers") or SERVER_WRAPPERS)
        res = dict((name, [re.compile(p) for p in pats]) for name, pats in patterns.items())
        for pid, argv in process_argvs():
            line = " ".join(argv)
            if not any(p.search(line) for pats in res.values() for p in pats):
                continue  # the words are nowhere in the line: no readlink for most processes
            exe = _readlink("/proc/%d/exe" % pid)
            role, engine = process_role(argv, exe, patterns, wrappers)
            if role != ENGINE:
                continue  # `grep sglang.launch_server`, a wrapper, remotedbg's own words
            cwd = _readlink("/proc/%d/cwd" % pid)
            self.processes.append(
                {
                    "pid": pid,
                    "engine": engine,
                    "cmdline": redact_cmdline(argv),
                    "argv": redact_argv(argv),  # parsed as is (in a container: its own paths)
                    "exe": exe,
                    "cwd": cwd,
                    "container": container_info(pid),
                    "ppid": _ppid(pid),
                    "_argv": argv,
                }
            )
            container = self.processes[-1]["container"]
            if container:
                # launch paths as the host sees them, for whoever reads the command line next
                placed = [host_path(container, a) or a if a.startswith("/") else a for a in argv]
                self.processes[-1]["cmdline"] = redact_cmdline(placed)
                self.processes[-1]["cmdline_in_container"] = redact_cmdline(argv)

    def link_processes(self):
        """The install each server process imports, decided as its Python decides (see
        import_path): the first entry of its sys.path holding the engine's package. Other
        installs met on the way (the same venv's other engine) are recorded, not marked. A
        process whose environment this user may not read (another user's) gets no install and
        says why: none is borrowed. A process in a container names its own paths: they are read
        where the host sees them (a bind mount's source, else /proc/PID/root)."""
        for proc in self.processes:
            pid = proc["pid"]
            proc["installs"] = []
            argv = proc.pop("_argv")
            container = proc.get("container")
            how = "process:%d" % pid
            if container:
                how += " in container %s" % (container.get("name") or "?")

            def place(path, c=container):
                return host_path(c, path) if c and path else path

            environ = _environ(pid)
            if environ is None:
                proc["install_unknown"] = (
                    "pid %d runs as another user (uid %s): its environment (PYTHONPATH) and "
                    "working directory cannot be read, so the install it imports is unknown"
                    % (pid, process_uid(pid))
                )
                continue
            inst = self.imported_install(proc, argv, environ, place, how)
            if inst is not None:
                self._mark(inst, pid, how)
            elif not self.closed:
                proc["install_unknown"] = "no %s package on the sys.path of pid %d" % (
                    proc["engine"],
                    pid,
                )

    def imported_install(self, proc, argv, environ, place, how):
        """The install of the process's engine that `import <package>` finds first."""
        engine = proc["engine"]
        package = self.engines[engine]["package"]
        for entry in self.import_path(proc, argv, environ, place, how):
            candidate = os.path.join(entry, package)
            if self.engine_of(candidate) == engine:  # None when outside the named roots
                return self.add_install(candidate, engine, how, self._kind_of(candidate))
            if os.path.basename(entry) in ("site-packages", "dist-packages"):
                for inst in self.check_site(entry, how):
                    if inst["engine"] == engine and inst.get("editable_from") == entry:
                        return inst  # an editable install: its finder maps the package
        return None

    def import_path(self, proc, argv, environ, place, how):
        """sys.path as the process's interpreter builds it (host paths): the script's folder
        (the working directory for -m and -c), PYTHONPATH, the user site (outside a venv), then
        the site-packages of the interpreter as invoked (a venv's) and as resolved."""
        cwd = place(proc.get("cwd")) or "/"
        entries = []
        first = _script_dir(argv[1:], cwd, place)
        if first:
            entries.append(first)
        for part in (environ.get("PYTHONPATH") or "").split(":"):
            if part:
                entries.append(place(part) if part.startswith("/") else os.path.join(cwd, part))
        pythons = [place(argv[0])] if argv and argv[0].startswith("/") else []
        pythons.append(place(proc.get("exe")))
        prefixes = []
        for python in [p for p in pythons if p]:
            for p in (python, real_path(python)):
                if os.path.basename(os.path.dirname(p)) == "bin":
                    prefix = os.path.dirname(os.path.dirname(p))
                    if prefix not in prefixes:
                        prefixes.append(prefix)
        in_venv = any(os.path.isfile(os.path.join(p, "pyvenv.cfg")) for p in prefixes)
        home = environ.get("HOME")
        if home and not in_venv and "PYTHONNOUSERSITE" not in environ:
            user_site = os.path.join(place(home), ".local")
            entries.extend(sorted(glob.glob(os.path.join(user_site, "lib/python3*/site-packages"))))
        for prefix in prefixes:
            self.check_prefix(prefix, how)  # records its installs; marks none
            interp = self._seen_sites.get(real_path(prefix) + "|" + prefix) or {}
            entries.extend(interp.get("site_packages") or [])
        return [os.path.normpath(e) for e in entries]

    def _mark(self, inst, pid, how):
        if pid not in inst["running"]:
            inst["running"].append(pid)
        container = next(
            (p.get("container") for p in self.processes if p["pid"] == pid and p.get("container")),
            None,
        )
        if container and "container" not in inst:
            inst["container"] = container_place(container, inst["path"])
        if how not in inst["how_found"]:
            inst["how_found"].append(how)
        for proc in self.processes:
            if proc["pid"] == pid and inst["path"] not in proc["installs"]:
                proc["installs"].append(inst["path"])

    # -------------------------------------------------------------- details
    def describe(self, inst):
        eng = self.engines[inst["engine"]]
        pkg = inst["path"]
        version, source = _version_of(inst, eng)
        fork = None
        if version is None:
            version, source, fork = _other_distribution(inst, eng)
        elif _DEV_VERSION_RE.search(version):
            fork = {"distribution": eng["package"], "version": version, "dev": True}
        inst["version"] = version
        inst["version_source"] = source
        if fork:
            fork["of"] = inst["engine"]
            inst["fork"] = fork
        git = _git_head(pkg)
        if git:
            inst["git"] = git
        inst["models_dir"] = eng["models_dir"]
        inst["draft_files"] = []
        subs = [eng["models_dir"]] + list(eng.get("extra_models_dirs") or [])
        listings = [_py_files(os.path.join(pkg, sub)) for sub in subs]  # walked once, for both
        if self.hashes_first:
            stamp = inst["draft_stamp"] = _files_stamp(listings)
            if stamp is not None and self.draft_stamps.get(pkg) == stamp:
                inst["draft_files_same"] = True  # the client kept this install's list
                listings = []
        for files in listings:
            inst["draft_files"] += self.draft_files(inst["engine"], pkg, files)
        inst["worker_files"] = []
        for sub in eng.get("worker_dirs") or []:
            for path in _py_files(os.path.join(pkg, sub)):
                inst["worker_files"].append(os.path.relpath(path, pkg))
        inst["registry"] = None
        reg = eng.get("registry_file")
        if reg and os.path.isfile(os.path.join(pkg, reg)):
            inst["registry"] = self.file_entry(pkg, os.path.join(pkg, reg), [])
        inst["plugins"] = self.plugins(inst, eng)

    # ------------------------------------------------------------- plugins
    def plugins(self, inst, eng):
        """The distributions beside the engine whose entry_points.txt names one of its plugin
        groups (the engine loads them at start): their name, version and entry points, and
        the files of their packages that register something with the engine (its plugin
        markers), plus the modules those files name by string ("pkg.mod:Class"). Nothing of
        theirs is imported; paths are relative to the site-packages."""
        groups = set(eng.get("plugin_groups") or [])
        site = inst.get("site_packages") or inst.get("editable_from")
        if not site and self._kind_of(inst["path"]) == "site-packages":
            site = os.path.dirname(inst["path"])  # a package named with --root
        if not groups or not site or not os.path.isdir(site):
            return []
        markers = [re.compile(p) for p in eng.get("plugin_markers") or []]
        out = []
        for dist in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
            entries = _entry_points(_read_text(os.path.join(dist, "entry_points.txt"), 65536),
                                    groups)  # fmt: skip
            tops = list(dict.fromkeys(e["value"].split(":")[0].split(".")[0] for e in entries))
            if not entries or tops == [eng["package"]]:
                continue  # none, or the engine's own (vLLM registers its LoRA resolver so)
            head = _read_text(os.path.join(dist, "METADATA"), 8192) or ""
            name, version = _METADATA_NAME_RE.search(head), _METADATA_VERSION_RE.search(head)
            plugin = {
                "distribution": name.group(1) if name else os.path.basename(dist),
                "version": version.group(1) if version else None,
                "dist_info": os.path.basename(dist),
                "site": site,
                "entry_points": entries,
                "files": [],
            }
            for top in tops:
                plugin["files"] += self.plugin_files(site, top, markers)
            out.append(plugin)
        return out

    def plugin_files(self, site, top, markers):
        """The files of one plugin package (`top`) that match a registration marker, then the
        modules of that package the matching files name in strings."""
        files = _py_files(os.path.join(site, top))
        if not files and os.path.isfile(os.path.join(site, top + ".py")):
            files = [os.path.join(site, top + ".py")]
        chosen, texts = [], {}
        for path in files:
            if not self.budget.spend():
                break
            raw = _read_bytes(path, self.max_file_bytes)
            if raw is None:
                continue
            text = raw.decode("utf-8", "replace")
            hits = [m.group(0).strip()[:60] for m in (rx.search(text) for rx in markers) if m]
            if hits:
                chosen.append((path, ["plugin:" + h for h in hits], raw))
                texts[path] = text
        named = []
        named_re = re.compile(r"""["'](%s(?:\.\w+)+)(?::\w+)?["']""" % re.escape(top))
        for text in texts.values():
            for module in named_re.findall(text):
                for path in _module_files(site, module):
                    if path not in texts and path not in named:
                        named.append(path)
        out = [self.file_entry(site, p, m, raw) for p, m, raw in chosen]
        for path in named[:_MAX_PLUGIN_NAMED]:
            out.append(self.file_entry(site, path, ["named"]))
        return out

    def draft_files(self, engine, pkg, files):
        out = []
        excludes = set(self.engines[engine].get("name_excludes") or [])
        for path in files:
            base = os.path.basename(path)
            if base in excludes or base == "__init__.py":
                continue
            matched = []
            for rx in self._name_res[engine]:
                if rx.search(base):
                    matched.append("name:" + rx.pattern)
                    break
            head = _read_bytes(path, self.max_file_bytes)
            if head is None:
                continue
            text = head.decode("utf-8", "replace")
            for rx in self._marker_res[engine]:
                m = rx.search(text)
                if m:
                    matched.append("content:" + m.group(0).strip()[:60])
            if matched:
                out.append(self.file_entry(pkg, path, matched, head))
        return out

    def file_entry(self, pkg, path, matched, raw=None):
        """A file's entry with its source; with `hashes_first`, its sha256 instead (the client
        keeps sources by content and asks only for the ones it has not seen)."""
        try:
            size = os.path.getsize(path)
        except OSError:
            size = None
        if raw is None:
            raw = _read_bytes(path, self.max_file_bytes)
        text = raw.decode("utf-8", "replace") if raw is not None else None
        entry = {
            "path": os.path.relpath(path, pkg),
            "size": size,
            "capped": bool(size is not None and size > self.max_file_bytes),
            "matched_by": matched,
            "source": None,
            "omitted": False,
        }
        if raw is not None and self.hashes_first and not entry["capped"]:
            entry["sha256"] = hashlib.sha256(raw).hexdigest()
            return entry
        if text is not None and len(text) <= self.total_left:
            entry["source"] = text
            self.total_left -= len(text)
        elif text is not None:
            entry["omitted"] = True  # the scan's total source budget is spent
        return entry

    # ------------------------------------------------------------------ run
    def add_root(self, root):
        """A --var roots entry: an engine package itself, else a prefix and a tree to walk."""
        root = self.expand(root)
        engine = self.engine_of(root)
        if not engine and self.engine_of(os.path.realpath(root)):
            root = os.path.realpath(root)
            engine = self.engine_of(root)
        if engine:
            self.note(root)
            self.add_install(root, engine, "root-arg", self._kind_of(root))
            return
        if os.path.isdir(os.path.join(root, "lib")):
            for inst in self.check_prefix(root, "root-arg"):
                # a venv the user named: its installs are theirs, whatever else runs on the box
                if "root-arg" not in inst["how_found"]:
                    inst["how_found"].append("root-arg")
        self.walk(root, "root-arg", max(self.max_depth, 6))

    def search_system_prefixes(self):
        """The interpreters on PATH, the agent's own, and the system prefix globs."""
        for name in ("python3", "python"):
            python = _which(name)
            if python:
                self.check_python(python, "PATH")
        self.check_python(sys.executable, "agent")
        for pattern in self.k.get("prefix_globs_system") or []:
            self.check_prefix_glob(pattern, pattern)

    def search_home_prefixes(self):
        for pattern in self.k.get("prefix_globs_home") or []:
            self.check_prefix_glob(pattern, self.expand(pattern))

    def check_prefix_glob(self, pattern, expanded):
        """The prefixes `expanded` (`pattern`, ~ made the home) matches, labelled `pattern`."""
        for prefix in sorted(glob.glob(expanded)):
            self.check_prefix(prefix, "prefix:" + pattern)

    def walk_roots(self, search_home, search_system):
        walk_roots = []
        if search_home:
            walk_roots.extend(self.k.get("walk_roots_home") or [])
        if search_home == "all":
            walk_roots.extend(self.k.get("walk_roots_other_homes") or [])
        if search_system:
            walk_roots.extend(self.k.get("walk_roots_system") or [])
        for root in walk_roots:
            self.walk(self.expand(root), "checkout-search", self.max_depth)

    def described_installs(self):
        installs = []
        for real in self.order:
            inst = self.installs[real]
            try:
                self.describe(inst)
            except Exception as exc:  # one unreadable install must not hide the others
                inst["error"] = "%s: %s" % (type(exc).__name__, exc)
            inst["running"].sort()
            installs.append(inst)
        return installs

    def limits(self, installs):
        return {
            "walk_truncated": self.budget.truncated,
            "entries": self.budget.entries,
            "max_depth": self.max_depth,
            "max_file_bytes": self.max_file_bytes,
            "sources_omitted": any(
                f.get("omitted") for i in installs for f in i.get("draft_files") or []
            ),
        }

    def run(self, args):
        started = time.time()
        search_home = args.get("search_home", True)
        search_system = args.get("search_system", True)
        for root in args.get("roots") or []:
            self.add_root(root)
        self.closed = bool(args.get("only_roots"))
        if search_system:
            self.search_system_prefixes()
        if search_home:
            self.search_home_prefixes()
        if args.get("search_processes", True):
            self.scan_processes()
            self.link_processes()
        self.walk_roots(search_home, search_system)
        installs = self.described_installs()
        for proc in self.processes:
            proc.setdefault("installs", [])
            proc.pop("_argv", None)
        return {
            "installs": installs,
            "processes": self.processes,
            "interpreters": self.interpreters,
            "searched": self.searched,
            "home": self.home,
            "limits": self.limits(installs),
            "elapsed_s": round(time.time() - started, 3),
        }


def scan(args):
    """Entry point, see the module docstring. Returns {"installs", "processes", "interpreters",
    "searched", "home", "limits", "elapsed_s"}."""
    return _Scan(args).run(args)


# ---------------------------------------------------------------------- file helpers
def process_argvs():
    """(pid, argv) of every other process whose command line is readable, by pid."""
    own = set([os.getpid(), os.getppid()]) | ancestors(os.getpid(), _ppid)
    try:
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    except OSError:
        return
    for pid in pids:
        if pid in own:
            continue
        raw = _read_bytes("/proc/%d/cmdline" % pid, 65536)
        if raw:
            yield pid, [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _read_bytes(path, limit):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except (OSError, ValueError):
        return None


def _read_text(path, limit):
    raw = _read_bytes(path, limit)
    return raw.decode("utf-8", "replace") if raw is not None else None


def _ppid(pid):
    raw = _read_bytes("/proc/%d/stat" % pid, 4096)
    try:
        return int(raw.rsplit(b")", 1)[1].split()[1])
    except (AttributeError, IndexError, ValueError):
        return None


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _which(name):
    for d in (os.environ.get("PATH") or "").split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def _site_label(site):
    """'site-packages:<python>' for <prefix>/lib/pythonX.Y/site-packages, else with the dir."""
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(site)))
    if os.path.basename(os.path.dirname(os.path.dirname(site))) == "lib":
        for cand in ("bin/python3", "bin/python"):
            if os.path.exists(os.path.join(prefix, cand)):
                return "site-packages:" + os.path.join(prefix, cand)
    return "site-packages:" + site


def _py_files(top):
    out = []
    if not os.path.isdir(top):
        return out
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                out.append(os.path.join(dirpath, name))
                if len(out) >= _MAX_LISTED_FILES:
                    return out
    return out


def _files_stamp(listings):
    """sha256 of the stamp (agent/file_stamp.py) of every file draft_files looks at
    (`listings`: _py_files of each models dir, files followed as it reads them); None past
    _MAX_LISTED_FILES."""
    digest = hashlib.sha256()
    for files in listings:
        if len(files) >= _MAX_LISTED_FILES:
            return None
        for path in files:
            add_file(digest, path, os.stat)
    return digest.hexdigest()


def _environ(pid):
    """The process's environment, or None when this user may not read it."""
    raw = _read_bytes("/proc/%d/environ" % pid, 1 << 20)
    if raw is None:
        return None
    found = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            found[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return found


def _script_dir(args, cwd, place):
    """sys.path[0] of `python ARGS`: the working directory for -m and -c (and no script), else
    the folder of the script as resolved."""
    kind, word = interpreter_target(args)
    if kind != "script":
        return cwd
    script = place(word) if word.startswith("/") else os.path.join(cwd, word)
    return os.path.dirname(real_path(script))


def _version_of(inst, eng):
    pkg = inst["path"]
    sites = (inst.get("site_packages"), inst.get("editable_from"), os.path.dirname(pkg))
    for site in dict.fromkeys(s for s in sites if s):
        if not site:
            continue
        best = None
        for dist in eng.get("dist_names") or []:
            for d in glob.glob(os.path.join(site, dist + "-*.dist-info")):
                text = _read_text(os.path.join(d, "METADATA"), 65536) or ""
                m = _METADATA_VERSION_RE.search(text)
                if m:
                    mtime = os.path.getmtime(d)
                    if best is None or mtime > best[0]:
                        best = (mtime, m.group(1), os.path.basename(d))
        if best:
            return best[1], best[2] + "/METADATA"
    for name in eng.get("version_files") or []:
        text = _read_text(os.path.join(pkg, name), 65536)
        m = _VERSION_RE.search(text or "")
        if m:
            return m.group(1), name
    for rel in ("../pyproject.toml", "../../pyproject.toml"):
        text = _read_text(os.path.normpath(os.path.join(pkg, rel)), 262144)
        m = _PYPROJECT_VERSION_RE.search(text or "")
        if m and 'name = "%s"' % eng["package"] in (text or ""):
            return m.group(1), rel[3:]
    return None, None


def _other_distribution(inst, eng):
    """The engine's package installed by a distribution of another name (a fork: KTransformers'
    `sglang-kt` installs `sglang`): the dist-info beside it whose top_level.txt (else RECORD)
    names the package. (version, source, fork) or (None, None, None)."""
    pkg = inst["path"]
    package = os.path.basename(pkg)
    site = inst.get("site_packages") or os.path.dirname(pkg)
    for d in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        top = _read_text(os.path.join(d, "top_level.txt"), 4096)
        if top is not None:
            owns = package in top.split()
        else:
            owns = (package + "/__init__.py,") in (_read_text(os.path.join(d, "RECORD"), 1 << 20)
                                                   or "")  # fmt: skip
        if not owns:
            continue
        text = _read_text(os.path.join(d, "METADATA"), 65536) or ""
        name, version = _METADATA_NAME_RE.search(text), _METADATA_VERSION_RE.search(text)
        if name and version and name.group(1).lower() not in (eng.get("dist_names") or []):
            fork = {"distribution": name.group(1), "version": version.group(1)}
            return version.group(1), os.path.basename(d) + "/METADATA", fork
    return None, None, None


def _entry_points(text, groups):
    """[{"group", "name", "value"}] of an entry_points.txt (INI form) in `groups`."""
    out, group = [], None
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, sep, value = line.partition("=")
        if sep and group in groups:
            out.append({"group": group, "name": name.strip(),
                        "value": value.split("[")[0].strip()})  # fmt: skip
    return out


def _module_files(site, module):
    """The files `import module` runs in `site`: a module file, or a package's __init__ and
    the modules beside it (a package given to a registry is imported whole); for a dotted
    path that ends in a class name, its module."""
    parts = module.split(".")
    while parts:
        base = os.path.join(site, *parts)
        if os.path.isfile(base + ".py"):
            return [base + ".py"]
        if os.path.isfile(os.path.join(base, "__init__.py")):
            try:
                names = sorted(os.listdir(base))
            except OSError:
                names = []
            return [os.path.join(base, n) for n in names if n.endswith(".py")][:_MAX_PLUGIN_NAMED]
        parts = parts[:-1]
    return []


def _git_head(pkg):
    d = pkg
    for _ in range(3):
        d = os.path.dirname(d)
        git = os.path.join(d, ".git")
        if not os.path.isdir(git):
            continue
        head = (_read_text(os.path.join(git, "HEAD"), 4096) or "").strip()
        info = {"repo": d, "ref": None, "commit": None}
        if head.startswith("ref:"):
            ref = head[4:].strip()
            info["ref"] = ref
            sha = (_read_text(os.path.join(git, ref), 4096) or "").strip()
            if not sha:
                for line in (_read_text(os.path.join(git, "packed-refs"), 1 << 20) or "").split(
                    "\n"
                ):
                    if line.endswith(" " + ref):
                        sha = line.split(" ", 1)[0]
            info["commit"] = sha or None
        else:
            info["commit"] = head or None
        return info
    return None
