"""The release workflows (.github/workflows/*.yml) checked as far as they can be without GitHub's runners:
GitHub's workflow schema (vendored by check-jsonschema), cibuildwheel 3.3.0 reading the core job's own
CIBW_* settings, and what a schema cannot see: pinned actions and the inputs they declare, matrix
references, the decoder wheels the matrix builds against the manifest matcher (the release job's manifest
step is run on them), bash syntax of every run step, permissions, and secrets named in the README."""
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11 (the venv's)")

yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml (requirements-dev.txt, with check-jsonschema) "
                                                 "is not installed: the workflows cannot be read")

WORKFLOWS = REPO / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
REGISTRY = WORKFLOWS / "publish-registry.yml"
EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def load(path):
    # YAML 1.2 (ruamel's default), so the key `on` stays a string and "3.10" stays what it says.
    return yaml.YAML(typ="safe").load(Path(path).read_text(encoding="utf-8"))


def strings(node):
    """Every string anywhere in a parsed YAML node (keys included)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def references(node, context):
    """The names a workflow node reads from an expression context: 'matrix' -> {'os', 'torch', ...}."""
    pat = re.compile(rf"\b{context}\.([A-Za-z_][\w-]*)")
    return {name for s in strings(node) for e in EXPR.findall(s) for name in pat.findall(e)}


def expand_matrix(matrix):
    """The job combinations GitHub makes of a strategy.matrix: the product of the lists, less the excludes;
    an include extends every combination whose original values it does not change, else is one more."""
    base = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    combos = [dict(zip(base, values)) for values in itertools.product(*base.values())] if base else []
    for ex in matrix.get("exclude") or []:
        combos = [c for c in combos if not all(c.get(k) == v for k, v in ex.items())]
    for inc in matrix.get("include") or []:
        hits = [c for c in combos if all(c[k] == v for k, v in inc.items() if k in base)]
        for c in hits:
            c.update(inc)
        if not hits:
            combos.append(dict(inc))
    return combos


def combinations(job):
    matrix = (job.get("strategy") or {}).get("matrix")
    return expand_matrix(matrix) if isinstance(matrix, dict) else [{}]


def all_jobs():
    for wf in (RELEASE, REGISTRY):
        for name, job in load(wf)["jobs"].items():
            yield wf.name, name, job


def all_steps():
    for wf, name, job in all_jobs():
        for i, step in enumerate(job.get("steps") or []):
            yield wf, name, job, i, step


def step_named(job, name):
    found = [s for s in job["steps"] if s.get("name") == name]
    assert len(found) == 1, f"release.yml: expected one step named {name!r}, found {len(found)}"
    return found[0]


# ---- 1. GitHub's workflow schema -------------------------------------------------------------------

def check_jsonschema(*files):
    if importlib.util.find_spec("check_jsonschema") is None:
        pytest.skip("check-jsonschema (requirements-dev.txt) is not installed")
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", *map(str, files)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("workflow", [RELEASE, REGISTRY], ids=lambda p: p.name)
def test_workflow_matches_githubs_schema(workflow):
    r = check_jsonschema(workflow)
    assert r.returncode == 0, r.stdout + r.stderr


def test_schema_check_refuses_a_broken_workflow(tmp_path):
    # The check above is worth something only if the schema catches a mistake: a misspelt job key.
    text = RELEASE.read_text(encoding="utf-8")
    assert "    runs-on: ubuntu-latest\n" in text
    bad = tmp_path / "release.yml"
    bad.write_text(text.replace("    runs-on: ubuntu-latest\n", "    run-on: ubuntu-latest\n", 1), encoding="utf-8")
    r = check_jsonschema(bad)
    assert r.returncode != 0 and "run-on" in r.stdout + r.stderr, r.stdout + r.stderr


# ---- 2. the core job's cibuildwheel configuration -------------------------------------------------

# What the core job means to build on each runner of its matrix: one py3-none wheel per OS/arch, built once
# with CPython 3.12, manylinux (glibc) only, 64-bit Windows, Apple silicon. (runner: platform, its machine)
CORE_RUNNERS = {
    "ubuntu-22.04": ("linux", "x86_64", ["cp312-manylinux_x86_64"]),
    "ubuntu-24.04-arm": ("linux", "aarch64", ["cp312-manylinux_aarch64"]),
    "windows-2022": ("windows", "AMD64", ["cp312-win_amd64"]),
    "macos-14": ("macos", "arm64", ["cp312-macosx_arm64"]),
}

# cibuildwheel with platform.machine() answering the runner's machine, as `native` is resolved from it.
AS_RUNNER = ("import platform, sys\nmachine = sys.argv.pop(1)\nplatform.machine = lambda: machine\n"
             "from cibuildwheel.__main__ import main\nsys.argv[0] = 'cibuildwheel'\nmain()\n")


def core_step():
    job = load(RELEASE)["jobs"]["core"]
    found = [s for s in job["steps"] if str(s.get("uses", "")).startswith("pypa/cibuildwheel@")]
    assert len(found) == 1, "release.yml core: expected one pypa/cibuildwheel step"
    return job, found[0]


def cibw_env(step, drop=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    env.update({k: str(v) for k, v in (step.get("env") or {}).items() if k.startswith("CIBW_") and k not in drop})
    return env


def print_identifiers(step, runner, drop=()):
    if importlib.util.find_spec("cibuildwheel") is None:
        pytest.skip("cibuildwheel (requirements-dev.txt) is not installed")
    platform, machine, _ = CORE_RUNNERS[runner]
    package = REPO / step["with"]["package-dir"]
    r = subprocess.run([sys.executable, "-c", AS_RUNNER, machine, "--print-build-identifiers", "--platform",
                        platform, str(package)], capture_output=True, text=True, env=cibw_env(step, drop),
                       cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split()


def test_core_matrix_is_the_runners_checked_here():
    job, _ = core_step()
    assert job["strategy"]["matrix"]["os"] == list(CORE_RUNNERS), \
        "release.yml core: matrix.os changed; say in CORE_RUNNERS what each runner must build"


@pytest.mark.parametrize("runner", list(CORE_RUNNERS))
def test_core_job_builds_exactly_the_intended_wheel(runner):
    _, step = core_step()
    assert print_identifiers(step, runner) == CORE_RUNNERS[runner][2]


def test_core_job_skip_of_musllinux_is_what_keeps_it_out():
    # Without CIBW_SKIP the same settings would also build a musllinux wheel: the skip is load-bearing.
    _, step = core_step()
    ids = print_identifiers(step, "ubuntu-22.04", drop=("CIBW_SKIP",))
    assert "cp312-musllinux_x86_64" in ids and "cp312-manylinux_x86_64" in ids


def test_core_wheel_is_py3_none_so_one_cpython_serves_all():
    _, step = core_step()
    pyproject = tomllib.loads((REPO / step["with"]["package-dir"] / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["scikit-build"]["wheel"]["py-api"] == "py3"
    assert pyproject["project"]["requires-python"] == ">=3.8"


def test_core_job_build_options_as_cibuildwheel_reads_them():
    if importlib.util.find_spec("cibuildwheel") is None:
        pytest.skip("cibuildwheel (requirements-dev.txt) is not installed")
    from cibuildwheel.options import CommandLineArguments, compute_options
    _, step = core_step()
    args = CommandLineArguments.defaults()
    args.package_dir = REPO / step["with"]["package-dir"]
    env = cibw_env(step)
    seen = {}
    for platform, _, (identifier,) in CORE_RUNNERS.values():
        bo = compute_options(platform, args, env).build_options(identifier)
        seen[identifier] = bo
        assert bo.before_all.strip(), f"{identifier}: no before-all (its nlohmann_json install)"
        assert "import headroom_core" in (bo.test_command or ""), f"{identifier}: no import test"
        # The environment must parse (cibuildwheel evaluates it with bash rules) to the variables meant.
        assert bo.environment.as_dictionary({"PATH": "/usr/bin"}).keys() >= {"PATH"}
    for arch in ("x86_64", "aarch64"):
        image = seen[f"cp312-manylinux_{arch}"].manylinux_images[arch]
        assert f"/manylinux_2_28_{arch}:" in image, image
    win = seen["cp312-win_amd64"].environment.as_dictionary({})
    assert "-DCMAKE_TOOLCHAIN_FILE=C:/vcpkg/scripts/buildsystems/vcpkg.cmake" in win["CMAKE_ARGS"].split()
    assert seen["cp312-macosx_arm64"].environment.as_dictionary({})["MACOSX_DEPLOYMENT_TARGET"] == "11.0"


def test_pinned_cibuildwheel_is_the_actions_version():
    # pypa/cibuildwheel@vX installs cibuildwheel X; the checks above must run the same one.
    if importlib.util.find_spec("cibuildwheel") is None:
        pytest.skip("cibuildwheel (requirements-dev.txt) is not installed")
    import cibuildwheel
    _, step = core_step()
    assert step["uses"] == f"pypa/cibuildwheel@v{cibuildwheel.__version__}", \
        f"release.yml uses {step['uses']} but cibuildwheel {cibuildwheel.__version__} is installed (requirements-dev.txt)"


def test_tag_check_passes_the_version_and_stops_another(tmp_path):
    job = load(RELEASE)["jobs"]["core"]
    script = step_named(job, "The tag is the version")["run"]
    version = tomllib.loads((REPO / "native/capi/pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    for tag, ok in ((f"v{version}", True), (f"v{version}.1", False), (version, False)):
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=REPO,
                           env=dict(os.environ, GITHUB_REF_NAME=tag), capture_output=True, text=True, timeout=30)
        assert (r.returncode == 0) == ok, (tag, r.stdout, r.stderr)


def test_released_versions_agree():
    # The tag check reads native/capi; the decoder wheels and the pack must carry the same version.
    versions = {p: tomllib.loads((REPO / p).read_text(encoding="utf-8"))["project"]["version"]
                for p in ("pyproject.toml", "native/capi/pyproject.toml", "native/python/pyproject.toml")}
    versions["nodes/native/decoder_wheels.json"] = json.loads((REPO / "nodes/native/decoder_wheels.json").read_text())["version"]
    assert len(set(versions.values())) == 1, versions


# ---- 3. what a schema cannot see ------------------------------------------------------------------

PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+(\.\d+)*|[0-9a-f]{40})$")


def unpinned(uses_values):
    return [u for u in uses_values if not (u.startswith("./") or u.startswith("docker://") or PINNED.match(u))]


def test_every_action_is_pinned_to_a_version_tag_or_commit():
    uses = [str(s["uses"]) for *_, s in all_steps() if "uses" in s]
    uses += [str(j["uses"]) for _, _, j in all_jobs() if "uses" in j]
    assert uses and unpinned(uses) == []


def test_pin_check_refuses_branches():
    assert unpinned(["a/b@main", "a/b@master", "pypa/gh-action-pypi-publish@release/v1", "a/b", "a/b@v1",
                     "a/b@v3.3.0", "a/b@" + "0" * 40]) == ["a/b@main", "a/b@master",
                                                          "pypa/gh-action-pypi-publish@release/v1", "a/b"]


# The inputs each pinned action declares in its action.yml at that ref (read from the action's repository;
# gh-action-pypi-publish: the names of its v1.x action.yml, which v1.13.0 keeps). A bumped action lands here
# only after its action.yml has been read again. (inputs, required without a default)
ACTION_INPUTS = {
    "actions/checkout@v4": ({"repository", "ref", "token", "ssh-key", "ssh-known-hosts", "ssh-strict", "ssh-user",
                             "persist-credentials", "path", "clean", "filter", "sparse-checkout",
                             "sparse-checkout-cone-mode", "fetch-depth", "fetch-tags", "show-progress", "lfs",
                             "submodules", "set-safe-directory", "github-server-url", "allow-unsafe-pr-checkout"},
                            set()),
    "actions/upload-artifact@v4": ({"name", "path", "if-no-files-found", "retention-days", "compression-level",
                                    "overwrite", "include-hidden-files"}, {"path"}),
    "actions/download-artifact@v4": ({"name", "artifact-ids", "path", "pattern", "merge-multiple", "github-token",
                                      "repository", "run-id"}, set()),
    "actions/setup-python@v5": ({"python-version", "python-version-file", "cache", "architecture", "check-latest",
                                 "token", "cache-dependency-path", "update-environment", "allow-prereleases",
                                 "freethreaded"}, set()),
    "pypa/cibuildwheel@v3.3.0": ({"package-dir", "output-dir", "config-file", "only", "extras"}, set()),
    "jlumbroso/free-disk-space@v1.3.1": ({"android", "dotnet", "haskell", "large-packages", "docker-images",
                                          "tool-cache", "swap-storage"}, set()),
    "Jimver/cuda-toolkit@v0.2.35": ({"cuda", "sub-packages", "non-cuda-sub-packages", "method", "linux-local-args",
                                     "use-github-cache", "use-local-cache", "log-file-suffix"}, set()),
    "ilammy/msvc-dev-cmd@v1": ({"arch", "sdk", "spectre", "toolset", "uwp", "vsversion"}, set()),
    "pypa/gh-action-pypi-publish@v1.13.0": ({"user", "password", "repository-url", "packages-dir", "verify-metadata",
                                             "skip-existing", "verbose", "print-hash", "attestations"}, set()),
    "softprops/action-gh-release@v2": ({"body", "body_path", "name", "tag_name", "draft", "prerelease", "files",
                                        "overwrite_files", "fail_on_unmatched_files", "repository", "token",
                                        "target_commitish", "discussion_category_name", "generate_release_notes",
                                        "append_body", "make_latest", "preserve_order", "previous_tag",
                                        "working_directory"}, set()),
    "Comfy-Org/publish-node-action@0eb6cd742945443bee7f79eeddd4f732780029a1": ({"personal_access_token"},
                                                                               {"personal_access_token"}),
}
# CUDA versions Jimver/cuda-toolkit@v0.2.35 installs with method: network (src/links/*-links.ts; Linux
# installs cuda-X-Y from NVIDIA's apt repository, Windows downloads the network installer of that version).
CUDA_TOOLKIT_NETWORK = {"Linux": {"12.8.0", "12.8.1", "13.0.0", "13.0.1", "13.0.2"},
                        "Windows": {"12.8.0", "12.8.1", "13.0.0", "13.0.1", "13.0.2"}}


def test_every_step_gives_only_inputs_its_action_declares():
    problems = []
    for wf, job, _, i, step in all_steps():
        if "uses" not in step:
            continue
        where = f"{wf} {job} step {i} ({step['uses']})"
        if step["uses"] not in ACTION_INPUTS:
            problems.append(f"{where}: not in ACTION_INPUTS (read its action.yml at that ref, add its inputs)")
            continue
        declared, required = ACTION_INPUTS[step["uses"]]
        given = set(step.get("with") or {})
        problems += [f"{where}: input {k!r} is not one the action declares" for k in sorted(given - declared)]
        problems += [f"{where}: required input {k!r} missing" for k in sorted(required - given)]
    assert problems == []


def test_matrix_references_exist_in_every_combination():
    problems = []
    for wf, name, job in all_jobs():
        body = {k: v for k, v in job.items() if k != "strategy"}
        used = references(body, "matrix")
        for combo in combinations(job):
            missing = used - set(combo)
            if missing:
                problems.append(f"{wf} {name}: matrix.{sorted(missing)} not set for {combo or 'a job without a matrix'}")
    assert problems == []


def test_matrix_expansion_follows_githubs_include_rules():
    # An include matching an original value extends those combinations; one matching none is a new one.
    combos = expand_matrix({"os": ["a", "b"], "cuda": ["1", "2"],
                            "include": [{"cuda": "1", "kit": "1.0"}, {"os": "c", "kit": "x"}],
                            "exclude": [{"os": "b", "cuda": "2"}]})
    assert combos == [{"os": "a", "cuda": "1", "kit": "1.0"}, {"os": "a", "cuda": "2"},
                      {"os": "b", "cuda": "1", "kit": "1.0"}, {"os": "c", "kit": "x"}]
    job = {"strategy": {"matrix": {"os": ["a"]}}, "runs-on": "${{ matrix.os }}", "name": "${{ matrix.nope }}"}
    assert references({k: v for k, v in job.items() if k != "strategy"}, "matrix") == {"os", "nope"}


def test_needs_name_jobs_of_the_same_workflow():
    for wf in (RELEASE, REGISTRY):
        jobs = load(wf)["jobs"]
        for name, job in jobs.items():
            needs = job.get("needs") or []
            for n in [needs] if isinstance(needs, str) else needs:
                assert n in jobs, f"{wf.name} {name}: needs {n!r}, which is no job of this workflow"


def runner_oses(job):
    """The runner OS families a job can land on (its runs-on over every matrix combination)."""
    out = set()
    for combo in combinations(job):
        label = EXPR.sub(lambda m: str(combo.get(m.group(1).strip().removeprefix("matrix."), "")),
                         str(job["runs-on"]))
        out.add("Windows" if label.startswith("windows") else "macOS" if label.startswith("macos") else "Linux")
    return out


def step_oses(job, step):
    cond = str(step.get("if", ""))
    only = re.findall(r"runner\.os\s*==\s*'(\w+)'", cond)
    return runner_oses(job) & set(only) if only else runner_oses(job)


def test_run_steps_are_bash_and_parse():
    problems = []
    for wf, name, job, i, step in all_steps():
        if "run" not in step:
            continue
        where = f"{wf} {name} step {i} ({step.get('name', '')})"
        shell = step.get("shell") or ((job.get("defaults") or {}).get("run") or {}).get("shell")
        if shell is None and "Windows" in step_oses(job, step):
            problems.append(f"{where}: runs in PowerShell on Windows; the script is bash (give shell: bash)")
        if shell not in (None, "bash"):
            problems.append(f"{where}: shell {shell!r}; these checks parse bash only")
            continue
        script = EXPR.sub("EXPR", step["run"])
        r = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True, timeout=30)
        if r.returncode:
            problems.append(f"{where}: bash -n: {r.stderr.strip()}")
    assert problems == []


def test_publishing_jobs_hold_the_permissions_they_need():
    jobs = load(RELEASE)["jobs"]
    uses = {name: {str(s.get("uses", "")).split("@")[0] for s in job.get("steps") or []} for name, job in jobs.items()}
    for name, job in jobs.items():
        perms = job.get("permissions") or {}
        if "softprops/action-gh-release" in uses[name]:
            assert perms.get("contents") == "write", f"{name}: creating a release needs contents: write"
        if "pypa/gh-action-pypi-publish" in uses[name]:
            step = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish"))
            assert "password" not in (step.get("with") or {}), f"{name}: trusted publishing takes no token"
            assert perms.get("id-token") == "write" and job.get("environment"), \
                f"{name}: trusted publishing needs id-token: write and the environment PyPI trusts"
        # Anything that publishes runs on a tag only (workflow_dispatch builds and publishes nothing).
        if uses[name] & {"softprops/action-gh-release", "pypa/gh-action-pypi-publish"}:
            assert job.get("if") == "startsWith(github.ref, 'refs/tags/v')", f"{name}: publishes off a tag"


def test_registry_job_runs_for_the_repository_that_publishes():
    repo_url = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Repository"]
    owner = repo_url.rstrip("/").split("/")[-2]
    job = load(REGISTRY)["jobs"]["publish-node"]
    assert f"github.repository_owner == '{owner}'" in job["if"], (job["if"], repo_url)


def test_secrets_and_environments_are_documented_in_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## Releases\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    assert m, "README.md has no '## Releases' section"
    section = m.group(1)
    secrets = set().union(*(references(load(wf), "secrets") for wf in (RELEASE, REGISTRY)))
    environments = {job["environment"] for _, _, job in all_jobs() if job.get("environment")}
    assert secrets and environments  # (the registry's token, PyPI's trusted-publishing environment)
    for name in sorted(secrets | environments):
        assert f"`{name}`" in section, f"README '## Releases' does not name `{name}`"


# ---- the decoder matrix against nodes/native/decoder_wheels.py -------------------------------------------

# The sysconfig platform Python reports on each decoder runner (what nodes/native/decoder_wheels.platform_tag reads).
DECODER_RUNNERS = {"ubuntu-22.04": ("Linux", "linux-x86_64"), "windows-2022": ("Windows", "win-amd64")}


def by_path(name, path):
    spec = importlib.util.spec_from_file_location(name, REPO / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def decoder_combos():
    job = load(RELEASE)["jobs"]["decoders"]
    combos = combinations(job)
    assert 0 < len(combos) <= 256, f"release.yml decoders: {len(combos)} jobs (GitHub allows 256 per matrix)"
    return job, combos


def test_decoder_toolkit_and_index_match_each_cuda():
    from packaging.specifiers import SpecifierSet
    job, combos = decoder_combos()
    wheel_pythons = SpecifierSet(tomllib.loads((REPO / "native/python/pyproject.toml").read_text(encoding="utf-8"))
                                 ["project"]["requires-python"])
    for c in combos:
        assert c["python"] in wheel_pythons, f"decoders: Python {c['python']} is outside {wheel_pythons}"
        assert c["os"] in DECODER_RUNNERS, f"decoders: runner {c['os']} has no platform in DECODER_RUNNERS"
        assert c["toolkit"].startswith(c["cuda"] + "."), c            # nvcc of the CUDA torch was built with
        assert c["index"] == "https://download.pytorch.org/whl/cu" + c["cuda"].replace(".", ""), c
        assert c["toolkit"] in CUDA_TOOLKIT_NETWORK[DECODER_RUNNERS[c["os"]][0]], c
        assert re.fullmatch(r"3\.\d+", c["python"]) and re.fullmatch(r"\d+\.\d+", c["torch"]), c
    # Blackwell machine code (sm_100, sm_120) needs CUDA >= 12.8 from every toolkit of the matrix.
    if re.search(r"\b1[02]0-real\b", job["env"]["CUDA_ARCHS"]):
        assert min(tuple(map(int, c["cuda"].split("."))) for c in combos) >= (12, 8)


def test_decoder_wheels_of_the_matrix_are_what_the_manifest_selects(tmp_path):
    """Every job's wheel named as the build script names it, its entry made by scripts/decoder_wheel_meta.py,
    the release job's own manifest step run over all of them, and the installer's matcher asked, for each job's
    torch/CUDA/CPython/platform at a later patch release, which wheel it takes: exactly that job's."""
    job, combos = decoder_combos()
    meta = by_path("headroom_decoder_wheel_meta_t", "scripts/decoder_wheel_meta.py")
    dw = by_path("headroom_decoder_wheels_t", "nodes/native/decoder_wheels.py")
    decoders = tmp_path / "decoders"
    decoders.mkdir()
    artifacts, expected = set(), {}
    for c in combos:
        sysplat = DECODER_RUNNERS[c["os"]][1]
        py = tuple(int(x) for x in c["python"].split("."))
        built_torch = f"{c['torch']}.0+cu{c['cuda'].replace('.', '')}"      # what pip takes from matrix.index
        tag = f"cp{py[0]}{py[1]}"
        wheel = decoders / (f"headroom_torch-{meta.wheel_version(built_torch, c['cuda'])}-{tag}-{tag}-"
                            f"{sysplat.replace('-', '_')}.whl")
        assert not wheel.exists(), f"two decoder jobs build {wheel.name}"
        wheel.write_bytes(wheel.name.encode())
        entry = meta.manifest_entry(wheel, built_torch, c["cuda"], py, sysplat)
        (decoders / (wheel.name[:-len(".whl")] + ".json")).write_text(json.dumps(entry))
        name = EXPR.sub(lambda m: str(c[m.group(1).strip().removeprefix("matrix.")]),
                        next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact"))
                        ["with"]["name"])
        assert name not in artifacts, f"two decoder jobs upload artifact {name}"
        artifacts.add(name)
        running = dw.running_key(f"{c['torch']}.1+cu{c['cuda'].replace('.', '')}", c["cuda"], py, sysplat)
        expected[wheel.name] = running

    release = load(RELEASE)["jobs"]["github-release"]
    step = step_named(release, "Generate decoder_wheels.json")
    (tmp_path / "nodes" / "native").mkdir(parents=True)
    shutil.copy(REPO / "nodes" / "native" / "decoder_wheels.json", tmp_path / "nodes" / "native")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    base = "https://github.com/o/r/releases/download/v0"
    r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BASE_URL=base, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == f"{len(combos)} decoder wheels"

    manifest = json.loads((tmp_path / "decoder_wheels.json").read_text())
    assert manifest["version"] == json.loads((REPO / "nodes" / "native" / "decoder_wheels.json").read_text())["version"]
    wheels = dw.load_manifest(tmp_path / "decoder_wheels.json")
    assert len(wheels) == len(combos)
    for file, key in expected.items():
        entry, why = dw.select(wheels, key)
        assert why is None and entry["file"] == file, (key, why)
        assert entry["url"] == f"{base}/{file}"
    # ...and a torch the matrix has no build for (the next minor) gets none, with the reason.
    c = combos[0]
    newer = f"{c['torch'].split('.')[0]}.{max(int(x['torch'].split('.')[1]) for x in combos) + 1}.0"
    entry, why = dw.select(wheels, dw.running_key(newer, c["cuda"], (3, int(c["python"].split(".")[1])),
                                                  DECODER_RUNNERS[c["os"]][1]))
    assert entry is None and "no decoder wheel" in why
