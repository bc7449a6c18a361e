"""Run by Label Studio's own Python (its venv, with label-studio-sdk) from tests/test_label_studio.py:
create a project with the generated labelling config, import the review tasks, annotate some through the
API as an annotator would, skip one, and export the project as JSON.

    python label_studio_client.py URL TOKEN CONFIG.xml TASKS.json ANSWERS.json EXPORT.json

ANSWERS.json: ``{"annotate": [[query, label, code, automation or null], ...], "skip": [query, ...]}``;
a task is found by its query. Prints one JSON line: the project id, the tasks imported, the export's size.
"""

import json
import sys

from label_studio_sdk import LabelStudio


def result(label, code, automation):
    out = [{"from_name": "label", "to_name": "query", "type": "choices", "value": {"choices": [label]}},
           {"from_name": "primary_reason_code", "to_name": "query", "type": "choices", "value": {"choices": [code]}}]
    if automation is not None:
        out.append({"from_name": "automation", "to_name": "query", "type": "textarea", "value": {"text": [automation]}})
    return out


def main(url, token, config_path, tasks_path, answers_path, export_path):
    ls = LabelStudio(base_url=url, api_key=token)
    config = open(config_path, encoding="utf-8").read()
    project = ls.projects.create(title="fastslow review", label_config=config)
    tasks = json.load(open(tasks_path, encoding="utf-8"))
    imported = ls.projects.import_tasks(id=project.id, request=tasks)
    by_query = {t.data["query"]: t.id for t in ls.tasks.list(project=project.id)}
    answers = json.load(open(answers_path, encoding="utf-8"))
    for query, label, code, automation in answers["annotate"]:
        ls.annotations.create(id=by_query[query], result=result(label, code, automation))
    for query in answers["skip"]:
        ls.annotations.create(id=by_query[query], result=[], was_cancelled=True)
    exported = ls.projects.exports.as_json(project.id)
    with open(export_path, "w", encoding="utf-8") as f:
        json.dump(exported, f, ensure_ascii=False)
    print(json.dumps({"project": project.id, "imported": imported.task_count, "tasks": len(by_query),
                      "export_tasks": len(json.load(open(export_path, encoding="utf-8")))}))


if __name__ == "__main__":
    main(*sys.argv[1:])
