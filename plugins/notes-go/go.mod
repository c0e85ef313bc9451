module notes-go

go 1.24

require piton v0.0.0

replace piton => ../../guest-sdk/go
