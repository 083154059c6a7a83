module github.com/vcfsm/vcfsm/tools/openapi

go 1.26.0
