module github.com/libalpa/alpa/bindings/go

go 1.19
