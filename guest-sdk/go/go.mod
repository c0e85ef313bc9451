module piton

go 1.24
