package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminNamespaceChaos sets a namespace's fault rules from a file and from
// standard input, refuses a wrong list with the rule's field named (keeping
// the rules it had), and clears them.
func TestAdminNamespaceChaos(t *testing.T) {
	dir := t.TempDir()
	admin(t, dir, false, "--create", "org", "create", "acme")
	admin(t, dir, false, "namespace", "create", "flaky", "--org", "acme")
	file := filepath.Join(t.TempDir(), "rules.json")
	os.WriteFile(file, []byte(`{"rules": [{"stage": "rcpt", "match": "Retry-*@*", "reply": "451  4.3.0  Later"}, {"stage": "after_data", "every": 2, "disconnect": true}]}`), 0o600)
	out := admin(t, dir, false, "--json", "namespace", "chaos", "FLAKY", "--rules", file)
	var got struct {
		Namespace string
		Rules     []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Namespace != "flaky" || len(got.Rules) != 2 ||
		got.Rules[0]["reply"] != "451 4.3.0 Later" || got.Rules[0]["match"] != "retry-*@*" || got.Rules[1]["every"] != 2.0 {
		t.Fatalf("chaos --rules --json = %q (%v)", out, err)
	}
	if out := admin(t, dir, false, "namespace", "chaos", "flaky", "--rules", file); !strings.Contains(out, "Set 2 fault rule(s) on namespace flaky") ||
		!strings.Contains(out, `rules[1] {"stage":"after_data","every":2,"disconnect":true}`) {
		t.Fatalf("chaos --rules text = %q", out)
	}

	obj, _ := adminJSONErr(t, dir, "namespace", "chaos", "flaky", "--rules", writeFile(t, `{"rules": [{"stage": "connect", "reply": "421"}]}`))
	if obj.Code != "stage_not_per_namespace" || obj.Error != "Bad Request" || !strings.Contains(obj.Message, "rules[0].stage") {
		t.Fatalf("connect stage: %+v", obj)
	}
	obj, _ = adminJSONErr(t, dir, "namespace", "chaos", "flaky", "--rules", writeFile(t, `{"rules": [{"stage": "rcpt", "delay_ms": "x"}]}`))
	if obj.Code != "invalid_parameter" || !strings.Contains(obj.Message, "rules[0].delay_ms") {
		t.Fatalf("wrong type: %+v", obj)
	}
	obj, _ = adminJSONErr(t, dir, "namespace", "chaos", "nosuch", "--clear")
	if obj.Code != "not_found" {
		t.Fatalf("unknown namespace: %+v", obj)
	}
	obj, _ = adminJSONErr(t, dir, "namespace", "chaos", "flaky")
	if obj.Code != "invalid_argument" {
		t.Fatalf("neither --rules nor --clear: %+v", obj)
	}

	// Standard input; the refused changes above left two rules, now replaced.
	cmd := exec.Command(binary, "admin", "--json", "namespace", "chaos", "flaky", "--rules", "-")
	cmd.Env = append(os.Environ(), "CATCHBOX_DATA_DIR="+dir, "CATCHBOX_DATABASE_URL=", "CATCHBOX_SECRET_KEY=")
	cmd.Stdin = strings.NewReader(`{"rules": [{"stage": "data", "delay_ms": 5}]}`)
	stdout, err := cmd.Output()
	if err != nil || !strings.Contains(string(stdout), `"rules":[{"stage":"data","delay_ms":5}]`) {
		t.Fatalf("chaos --rules - = %q (%v)", stdout, err)
	}
	if out := admin(t, dir, false, "namespace", "chaos", "flaky", "--clear"); !strings.Contains(out, "Cleared the fault rules of namespace flaky") {
		t.Fatalf("chaos --clear = %q", out)
	}
	if out := admin(t, dir, false, "--json", "namespace", "chaos", "flaky", "--clear"); strings.TrimSpace(out) != `{"namespace":"flaky","rules":[]}` {
		t.Fatalf("chaos --clear --json = %q", out)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
