module github.com/go-shiori/dom

go 1.20

require (
	github.com/andybalholm/cascadia v1.3.2
	github.com/gogs/chardet v0.0.0-20211120154057-b7413eaefb8f
	golang.org/x/net v0.10.0
	golang.org/x/text v0.9.0
)
