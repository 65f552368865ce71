package agent

import "runtime"

func goosForPlans() string { return runtime.GOOS }
