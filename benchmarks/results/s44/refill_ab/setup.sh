# sourced first by every device call: wheels and the project's package links
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD SITE=/tmp/site
ln -sfn ../specs derivgraph/spec_library && ln -sfn ../examples derivgraph/examples
