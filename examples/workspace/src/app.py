def greet(name):
    return "hello, " + name


if __name__ == "__main__":
    print(greet("world"))
