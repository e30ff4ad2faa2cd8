"""A tiny JUBE benchmark: two workpackages, a figure with a unit, a table and a `<database>`;
the run the odd-path and read-only tests read."""

TINY = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="tiny" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2</parameter></parameterset>
    <patternset name="pat">
      <pattern name="rate" type="float" unit="items/s">rate $jube_pat_fp</pattern>
    </patternset>
    <step name="work"><use>p</use><do>echo "rate $n"</do></step>
    <analyser name="a"><use>pat</use><analyse step="work"><file>stdout</file></analyse></analyser>
    <result>
      <use>a</use>
      <table name="t"><column>n</column><column>rate</column></table>
      <database name="d" primekeys="n"><key>n</key><key>rate</key></database>
    </result>
  </benchmark>
</jube>
"""
