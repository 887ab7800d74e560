// Command argo-health runs a resource health check written in Lua the way
// Argo CD's application controller runs one, so that a test can see what
// Argo CD makes of the health check strata gives it for child
// Applications, on real objects.
//
// Usage:
//
//	argo-health SCRIPT OBJECT.json
//
// SCRIPT is the Lua text (as in argocd-cm's
// `resource.customizations.health.<group>_<kind>`), OBJECT.json the live
// object. As in argo-cd `util/lua/lua.go` (`runLua`, `ExecuteHealthLua`):
// gopher-lua with the standard libraries off but for package, base and
// table; the object as the global `obj`; one second to run; the returned
// table read as {status, message}, a status Argo CD does not know becoming
// Unknown, and nil an empty health.
//
// Prints {"status": ..., "message": ...} as one line of JSON. Exit status:
// 0 printed; 1 the script failed or returned something else than a table;
// 2 usage error or an unreadable object.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// The health statuses Argo CD knows (gitops-engine pkg/health).
var known = map[string]bool{
	"Unknown": true, "Progressing": true, "Healthy": true,
	"Suspended": true, "Degraded": true, "Missing": true,
}

type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: argo-health SCRIPT OBJECT.json")
		return 2
	}
	script, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "argo-health: %v\n", err)
		return 2
	}
	raw, err := os.ReadFile(args[1])
	if err != nil {
		fmt.Fprintf(stderr, "argo-health: %v\n", err)
		return 2
	}
	var obj any
	if err := json.Unmarshal(raw, &obj); err != nil {
		fmt.Fprintf(stderr, "argo-health: %s is not JSON: %v\n", args[1], err)
		return 2
	}
	h, err := check(string(script), obj)
	if err != nil {
		fmt.Fprintf(stderr, "argo-health: %v\n", err)
		return 1
	}
	out, _ := json.Marshal(h)
	fmt.Fprintln(stdout, string(out))
	return 0
}

func check(script string, obj any) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	switch ret := l.Get(-1).(type) {
	case *lua.LTable:
		h := health{}
		if s, ok := ret.RawGetString("status").(lua.LString); ok {
			h.Status = string(s)
		}
		if m, ok := ret.RawGetString("message").(lua.LString); ok {
			h.Message = string(m)
		}
		if !known[h.Status] {
			return health{Status: "Unknown", Message: "invalid health status"}, nil
		}
		return h, nil
	case *lua.LNilType:
		return health{}, nil
	default:
		return health{}, fmt.Errorf("the script returned a %s, not a table", ret.Type())
	}
}

// toLua gives a decoded JSON value as Lua sees an object: mappings and
// lists as tables (lists from 1), numbers, strings, booleans, and nil.
func toLua(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(toLua(l, e))
		}
		return t
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	default:
		return lua.LNil
	}
}
