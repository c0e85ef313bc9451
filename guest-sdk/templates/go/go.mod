module __PROJECT__

go 1.24

require piton v0.0.0

// piton's Go SDK, which piton new put in ./piton (piton build uses its own copy).
replace piton => ./piton
