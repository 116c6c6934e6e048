//go:build race

package remoting

const raceEnabled = true
