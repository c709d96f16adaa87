// heap_new.cpp - C++ new and delete for tests/record/heap.py: they reach
// libember-heap through malloc and free. make_array: 4 x new char[64], two
// deleted; make_obj: 3 x new Obj (24 B), all deleted.
struct Obj {
    long a, b, c;
};

__attribute__((noinline)) static char *make_array()
{
    return new char[64];
}

__attribute__((noinline)) static Obj *make_obj()
{
    return new Obj{1, 2, 3};
}

int main()
{
    char *arrays[4];
    for (auto &a : arrays)
        a = make_array();
    delete[] arrays[0];
    delete[] arrays[1];
    for (int i = 0; i < 3; i++)
        delete make_obj();
    return 0;
}
