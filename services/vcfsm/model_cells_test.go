package vcfsm_test

var modelTable = map[string]outcome{}
