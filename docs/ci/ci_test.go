package ci_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/docs/ci"
	"github.com/csi-olm/csi-olm/images"
)

// The script's environment, which both recipes set.
var scriptEnv = []string{"CHANGED", "REGISTRY_FLAGS"}

// TestRecipesRunTheImagesScript checks what the end-to-end test cannot run: that the GitHub
// Actions workflow runs the script the image carries, with the environment the script reads,
// and that the Tekton Task (whose step the end-to-end test runs) declares every parameter it
// uses and uses every one it declares.
func TestRecipesRunTheImagesScript(t *testing.T) {
	for _, name := range scriptEnv {
		if !strings.Contains(string(ci.CheckCatalogs), "${"+name+":-}") {
			t.Errorf("check-catalogs.sh does not read %s", name)
		}
	}

	var workflow struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(ci.GitHubActions, &workflow); err != nil {
		t.Fatalf("github-actions.yaml: %v", err)
	}
	var run string
	for _, job := range workflow.Jobs {
		for _, step := range job.Steps {
			if strings.Contains(step.Run, "docker run") {
				run = step.Run
			}
		}
	}
	for _, want := range append([]string{"--entrypoint " + images.CLICheckCatalogs + " "}, "-e "+strings.Join(scriptEnv, " -e ")) {
		if !strings.Contains(run, want) {
			t.Errorf("github-actions.yaml's docker run step does not say %q:\n%s", want, run)
		}
	}

	var task struct {
		Spec struct {
			Params []struct {
				Name string `json:"name"`
			} `json:"params"`
			Steps []struct {
				Command []string `json:"command"`
				Env     []struct {
					Name string `json:"name"`
				} `json:"env"`
			} `json:"steps"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(ci.TektonTask, &task); err != nil {
		t.Fatalf("tekton-task.yaml: %v", err)
	}
	if len(task.Spec.Steps) != 1 || !slices.Equal(task.Spec.Steps[0].Command, []string{images.CLICheckCatalogs}) {
		t.Errorf("tekton-task.yaml's steps %+v, want one that runs %s", task.Spec.Steps, images.CLICheckCatalogs)
	}
	var env []string
	for _, step := range task.Spec.Steps {
		for _, e := range step.Env {
			env = append(env, e.Name)
		}
	}
	if !slices.Equal(env, scriptEnv) {
		t.Errorf("tekton-task.yaml's step sets %v, want the script's environment %v", env, scriptEnv)
	}
	var declared, used []string
	for _, p := range task.Spec.Params {
		declared = append(declared, p.Name)
	}
	for _, m := range regexp.MustCompile(`\$\(params\.([a-z-]+)\)`).FindAllStringSubmatch(string(ci.TektonTask), -1) {
		if !slices.Contains(used, m[1]) {
			used = append(used, m[1])
		}
	}
	slices.Sort(declared)
	slices.Sort(used)
	if !slices.Equal(declared, used) {
		t.Errorf("tekton-task.yaml declares parameters %v and uses %v", declared, used)
	}
}
