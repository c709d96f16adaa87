// A C++ program whose hot functions live in an anonymous namespace: perf
// names them "(anonymous namespace)::...", a name that starts with "(".
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {
template <typename T, int N> struct Matrix {
    T v[N][N];
    __attribute__((noinline)) Matrix operator*(const Matrix &o) const
    {
        Matrix r{};
        for (int i = 0; i < N; i++)
            for (int k = 0; k < N; k++)
                for (int j = 0; j < N; j++)
                    r.v[i][j] += v[i][k] * o.v[k][j];
        return r;
    }
};

__attribute__((noinline)) double sum_squares(const std::vector<double> &xs)
{
    double s = 0;
    for (double x : xs)
        s += x * x;
    return s;
}
} // namespace

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    Matrix<double, 64> a{}, b{};
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++)
            a.v[i][j] = b.v[i][j] = (i + j) % 7 * 0.5;
    std::vector<double> xs(1 << 16, 1.5);
    std::function<double(int)> work = [&](int r) {
        Matrix<double, 64> c = a * b;
        return c.v[r % 64][3] + sum_squares(xs);
    };
    double t = 0;
    for (int r = 0; r < rounds; r++)
        t += work(r);
    printf("%g\n", t);
    return 0;
}
