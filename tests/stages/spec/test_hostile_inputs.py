"""What the hostile-input hardening (issue 12) accepts, through the real `bench`: internal XML
entities expanded as JUBE expands them, YAML aliases shared, lenient type= with a warning, and
`--no-eval` passing a file that needs no evaluation. The refusals are in bad_inputs/."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.run_bench import isolated_env


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = isolated_env(cwd)
    return subprocess.run([sys.executable, "-m", "caramel", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


ENTITIES = """\
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE jube [
      <!ENTITY greeting "hello">
      <!ENTITY dir "safe_dir">
    ]>
    <jube>
      <benchmark name="ent" outpath="bench_run">
        <parameterset name="p">
          <parameter name="msg">say &greeting; world</parameter>
        </parameterset>
        <step name="run">
          <use>p</use>
          <do>mkdir dir_&dir; ; echo "$msg &amp; &greeting; again" &gt; out.txt</do>
        </step>
      </benchmark>
    </jube>
    """


def test_internal_entities_are_expanded_in_parameters_and_dos(tmp_path):
    (tmp_path / "ent.xml").write_text(textwrap.dedent(ENTITIES))
    plan = bench("plan", "ent.xml", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["workpackages"][0]["parameters"]["msg"] == "say hello world"
    run = bench("run", "ent.xml", "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    work = tmp_path / "bench_run" / "000000" / "000000_run" / "work"
    assert (work / "out.txt").read_text() == "say hello world & hello again\n"
    assert (work / "dir_safe_dir").is_dir()


def test_yaml_aliases_are_read_shared_and_used(tmp_path):
    (tmp_path / "alias.yaml").write_text(textwrap.dedent("""\
        name: alias
        outpath: bench_run
        shared_defs: &common {name: nodes, type: int, _: "1,2"}
        parameterset:
          - name: a
            parameter: [*common, {name: tasks, _: "4"}]
          - name: b
            parameter: [*common]
        step:
          - {name: run, use: a, do: echo $nodes $tasks}
          - {name: other, use: b, do: echo $nodes}
        """))
    plan = bench("plan", "alias.yaml", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert [wp["parameters"]["nodes"] for wp in json.loads(plan.stdout)["workpackages"]] == [1, 2, 1, 2]


def test_unknown_types_are_strings_with_a_warning_as_in_jube(tmp_path):
    (tmp_path / "types.xml").write_text(textwrap.dedent("""\
        <jube>
          <benchmark name="types" outpath="bench_run">
            <parameterset name="p">
              <parameter name="flag" type="bool">true,false</parameter>
            </parameterset>
            <patternset name="pat">
              <pattern name="ok" type="boolean">ok=(\\w+)</pattern>
              <pattern name="n" type="integer">n=$jube_pat_int</pattern>
            </patternset>
            <step name="run">
              <use>p</use>
              <do>echo ok=$flag n=3</do>
            </step>
            <analyser name="a">
              <use>pat</use>
              <analyse step="run"><file>stdout</file></analyse>
            </analyser>
            <result>
              <use>a</use>
              <table name="t" style="csv"><column>flag</column><column>ok</column><column>n</column></table>
            </result>
          </benchmark>
        </jube>
        """))
    path = tmp_path / "types.xml"
    warnings = (f"warning: {path}:4: type='bool' of parameter 'flag' is not int, float or string; treated as a "
                "string, as JUBE does\n"
                f"warning: {path}:7: type='boolean' of pattern 'ok' is not int, float or string; treated as a "
                "string, as JUBE does\n"
                f"warning: {path}:8: type='integer' of pattern 'n' is not int, float or string; treated as a "
                "string, as JUBE does (did you mean 'int'?)\n")
    plan = bench("plan", "types.xml", cwd=tmp_path)
    assert (plan.returncode, plan.stderr) == (0, warnings)
    assert bench("run", "types.xml", "-q", cwd=tmp_path).returncode == 0
    result = bench("result", "-i", "last", "--no-history", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["flag,ok,n", "true,true,3", "false,false,3"]


@pytest.mark.slow
def test_no_eval_passes_a_plain_file_and_refuses_result_of_a_python_pattern(tmp_path):
    (tmp_path / "plain.yaml").write_text(textwrap.dedent("""\
        name: plain
        outpath: bench_run
        parameterset: {name: p, parameter: {name: n, _: "1,2"}}
        patternset:
          name: pat
          pattern:
            - {name: t, type: float, _: "t=$jube_pat_fp"}
            - {name: t2, type: float, mode: python, _: "$t * 2"}
        step: {name: run, use: p, active: "true", do: echo t=1.5}
        analyser: {name: a, use: pat, analyse: {step: run, file: stdout}}
        result: {use: a, table: {name: t, column: [n, t2]}}
        """))
    plan = bench("plan", "--no-eval", "plain.yaml", cwd=tmp_path)
    assert plan.returncode == 2
    assert plan.stderr.startswith(f"error: {tmp_path / 'plain.yaml'}:8: --no-eval: pattern 't2' is "
                                  'mode="python"; it would be evaluated as code')
    assert bench("run", "plain.yaml", "-q", cwd=tmp_path).returncode == 0
    refused = bench("result", "-i", "last", "--no-eval", "--no-history", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "--no-eval: pattern 't2' is mode=\"python\"" in refused.stderr
    report = bench("report", "-i", "last", "--no-eval", "-o", "r.html", "--history", "h.db", cwd=tmp_path)
    assert report.returncode == 2 and "--no-eval: pattern 't2'" in report.stderr
    assert not (tmp_path / "r.html").exists()
    (tmp_path / "plain.yaml").write_text((tmp_path / "plain.yaml").read_text().replace(
        '    - {name: t2, type: float, mode: python, _: "$t * 2"}\n', "").replace("[n, t2]", "[n, t]"))
    clean = bench("plan", "--no-eval", "plain.yaml", cwd=tmp_path)
    assert clean.returncode == 0 and clean.stderr == ""


def test_text_after_a_child_element_is_a_warning_as_jube_ignores_it(tmp_path: Path) -> None:
    (tmp_path / "tail.xml").write_text(textwrap.dedent("""\
        <?xml version="1.0" encoding="UTF-8"?>
        <jube>
          <benchmark name="hello" outpath="bench_run">
            <parameterset name="p">
              <parameter name="a">1</parameter> stray text
            </parameterset>
            <step name="run"><use>p</use><do>echo $a</do></step>
          </benchmark>
        </jube>
        """))
    done = bench("plan", "tail.xml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tail.xml:5: text 'stray text' after <parameter> inside <parameterset> is ignored" in done.stderr
    assert json.loads(done.stdout)["workpackages"][0]["parameters"]["a"] == "1"


def test_an_external_dtd_or_entity_declaration_is_refused_with_its_line(tmp_path: Path) -> None:
    """docs/security.md, "What is evaluated" (XML external entities and DTDs: refused, never
    fetched) and docs/file-format.md, "Entities, aliases and names": an external DTD and an
    external entity that no text references (expat, and caramel before, skipped both silently)
    are refused naming the file and the line of the declaration."""
    body = '<jube><benchmark name="b" outpath="run"><step name="s"><do>echo</do></step></benchmark></jube>\n'
    (tmp_path / "dtd.xml").write_text('<?xml version="1.0"?>\n<!DOCTYPE jube SYSTEM "file:///etc/passwd">\n'
                                      + body)
    (tmp_path / "param.xml").write_text('<?xml version="1.0"?>\n<!DOCTYPE jube [\n  <!ENTITY ok "fine">\n'
                                        '  <!ENTITY % ext SYSTEM "file:///etc/passwd">\n]>\n' + body)
    dtd = bench("plan", "dtd.xml", cwd=tmp_path)
    assert dtd.returncode == 2 and dtd.stdout == ""
    assert dtd.stderr.startswith(f"error: {tmp_path / 'dtd.xml'}:2: external DTD 'file:///etc/passwd' is "
                                 "refused (it would be read from outside the file)\n")
    param = bench("plan", "param.xml", cwd=tmp_path)
    assert param.returncode == 2 and param.stdout == ""
    assert param.stderr.startswith(f"error: {tmp_path / 'param.xml'}:4: external entity 'ext' is refused "
                                   "(it names 'file:///etc/passwd')\n")
