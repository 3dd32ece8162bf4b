module github.com/catchbox/catchbox/client

go 1.22
