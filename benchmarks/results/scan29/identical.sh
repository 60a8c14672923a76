#!/usr/bin/env bash
# The report is unchanged: scan28's check (cmp of JSON, SARIF and the text report with its
# elapsed seconds cut) against the base f43b165 (git archive at /tmp/base_scan29). From the root:
#   bash benchmarks/results/scan29/identical.sh > benchmarks/results/scan29/identical.txt 2>&1
sed -e 's#/tmp/base_scan28#/tmp/base_scan29#g' benchmarks/results/scan28/identical.sh | bash
