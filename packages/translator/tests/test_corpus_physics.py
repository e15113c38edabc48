"""Corpus: physics simulation kernels (integrators over a few fixed steps, stencils on 1-D and
2-D grids with slicing and np.roll, particle systems with pairwise broadcasting). Checked by
corpus_helpers.run_case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(404)
POS = RNG.uniform(-1, 1, size=(8, 3))
VEL = RNG.normal(scale=0.1, size=(8, 3))
MASS = RNG.uniform(1.0, 2.0, size=8)
ROD = np.sin(np.linspace(0, np.pi, 33))
FIELD = RNG.standard_normal((16, 16))
SPINS = np.where(RNG.uniform(size=(10, 10)) < 0.5, -1, 1)
LIFE = (RNG.uniform(size=(12, 12)) < 0.3).astype(np.int64)


def harmonic_verlet(x, v, k=4.0, dt=0.05, steps=8):
    a = -k * x
    for _ in range(steps):
        x = x + v * dt + 0.5 * a * dt * dt
        a_new = -k * x
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return x, v


def leapfrog_energy(x, v, k=1.0, m=1.0, dt=0.1, steps=10):
    v = v - 0.5 * dt * k * x / m
    for _ in range(steps):
        x = x + dt * v
        v = v - dt * k * x / m
    v = v + 0.5 * dt * k * x / m
    return 0.5 * m * (v**2).sum() + 0.5 * k * (x**2).sum()


def lennard_jones_energy(pos, eps=1.0, sigma=0.5):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = (d**2).sum(axis=-1) + np.eye(pos.shape[0])
    s6 = (sigma**2 / r2) ** 3
    pair = 4 * eps * (s6 * s6 - s6)
    return np.triu(pair, 1).sum()


def gravity_accelerations(pos, mass, g=1.0, soft=0.05):
    d = pos[None, :, :] - pos[:, None, :]
    inv_r3 = ((d**2).sum(-1) + soft**2) ** -1.5
    return g * np.einsum("ijk,ij,j->ik", d, inv_r3, mass)


def wave_step(u, u_prev, c=1.0, dt=0.01, dx=0.05):
    r2 = (c * dt / dx) ** 2
    u_next = np.zeros_like(u)
    u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + r2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u_next, u


def upwind_advection(u, c=0.5, steps=6):
    for _ in range(steps):
        u = u - c * (u - np.roll(u, 1))
    return u


def burgers_step(u, nu=0.01, dt=0.001, dx=0.05):
    un = u.copy()
    u[1:-1] = un[1:-1] - un[1:-1] * dt / dx * (un[1:-1] - un[:-2]) + nu * dt / dx**2 * (un[2:] - 2 * un[1:-1] + un[:-2])
    return u


def implicit_heat(u, r=0.4):
    n = u.shape[0]
    a = (1 + 2 * r) * np.eye(n) - r * np.eye(n, k=1) - r * np.eye(n, k=-1)
    return np.linalg.solve(a, u)


def diffusion_periodic(f, d=0.1, steps=4):
    for _ in range(steps):
        lap = np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0) + np.roll(f, 1, axis=1) + np.roll(f, -1, axis=1) - 4 * f
        f = f + d * lap
    return f


def life_step(board):
    neighbours = np.zeros_like(board)
    for i in (-1, 0, 1):
        for j in (-1, 0, 1):
            if (i, j) != (0, 0):
                neighbours += np.roll(np.roll(board, i, 0), j, 1)
    return ((neighbours == 3) | ((board == 1) & (neighbours == 2))).astype(board.dtype)


def ising_energy(spins, coupling=1.0, field=0.0):
    bonds = spins * np.roll(spins, 1, axis=0) + spins * np.roll(spins, 1, axis=1)
    return -coupling * bonds.sum() - field * spins.sum()


def spring_chain_forces(x, k=10.0, rest=0.1):
    stretch = np.diff(x) - rest
    f = np.zeros_like(x)
    f[:-1] += k * stretch
    f[1:] -= k * stretch
    return f


def projectile(v0, angle_deg, t, g=9.81):
    theta = math.radians(angle_deg)
    x = v0 * math.cos(theta) * t
    y = v0 * math.sin(theta) * t - 0.5 * g * t**2
    return np.stack([x, np.maximum(y, 0.0)], axis=-1)


def temperature(vel, mass, kb=1.0):
    kinetic = 0.5 * (mass[:, None] * vel**2).sum()
    dof = vel.size - 3
    return 2 * kinetic / (dof * kb)


def lorenz_rk4(state, sigma=10.0, rho=28.0, beta=8 / 3, dt=0.005, steps=5):
    def deriv(s):
        x, y, z = s[0], s[1], s[2]
        return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

    for _ in range(steps):
        k1 = deriv(state)
        k2 = deriv(state + 0.5 * dt * k1)
        k3 = deriv(state + 0.5 * dt * k2)
        k4 = deriv(state + dt * k3)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state


def pendulum_euler(theta, omega, g_over_l=9.81, dt=0.01, steps=12):
    for _ in range(steps):
        omega = omega - g_over_l * np.sin(theta) * dt
        theta = theta + omega * dt
    return theta, omega


def center_of_mass(pos, mass):
    return (mass[:, None] * pos).sum(axis=0) / mass.sum()


def inertia_tensor(pos, mass):
    r2 = (pos**2).sum(axis=1)
    return (mass * r2).sum() * np.eye(3) - np.einsum("i,ij,ik->jk", mass, pos, pos)


def radial_profile(field, nbins=4):
    n = field.shape[0]
    yy, xx = np.indices(field.shape)
    r = np.hypot(yy - (n - 1) / 2, xx - (n - 1) / 2)
    edges = np.linspace(0, r.max() + 1e-9, nbins + 1)
    inbin = (r[..., None] >= edges[:-1]) & (r[..., None] < edges[1:])
    return (field[..., None] * inbin).sum(axis=(0, 1)) / inbin.sum(axis=(0, 1))


def poisson_jacobi(rho, h=0.1, iters=10):
    phi = np.zeros_like(rho)
    for _ in range(iters):
        phi[1:-1, 1:-1] = 0.25 * (
            phi[:-2, 1:-1] + phi[2:, 1:-1] + phi[1:-1, :-2] + phi[1:-1, 2:] + h * h * rho[1:-1, 1:-1]
        )
    return phi


# ---- expected to break


def life_step_genexpr(board):
    neighbours = sum(
        np.roll(np.roll(board, i, 0), j, 1)  # a generator expression: FH014
        for i in (-1, 0, 1)
        for j in (-1, 0, 1)
        if (i, j) != (0, 0)
    )
    return ((neighbours == 3) | ((board == 1) & (neighbours == 2))).astype(board.dtype)


def energy_log(x, v, k=1.0):
    e = 0.5 * (v**2).sum() + 0.5 * k * (x**2).sum()
    print(f"energy {e:.4f}")  # formatting a graph value: FH012, then print: FH005
    return e


def run_until_settled(u, tol=1e-3, max_steps=50):
    for _ in range(max_steps):
        nxt = 0.5 * (np.roll(u, 1) + np.roll(u, -1))
        if np.abs(nxt - u).max() < tol:  # data-dependent exit inside a loop: FH002
            return nxt
        u = nxt
    return u


STATE = np.array([1.0, 1.0, 1.0])

CORPUS = [
    (harmonic_verlet, [(POS, VEL), (POS[:3, :2].astype(np.float32), VEL[:3, :2].astype(np.float32))], 1, []),
    (leapfrog_energy, [(POS, VEL), (POS[:4], VEL[:4], 2.0, 1.5, 0.05, 4)], 1, []),
    (lennard_jones_energy, [(POS,), (POS[:5], 0.5, 0.3)], 1, []),
    (gravity_accelerations, [(POS, MASS), (POS[:4], MASS[:4], 2.0)], 1, []),
    (wave_step, [(ROD, ROD * 0.99), (ROD[:9], ROD[:9] * 0.5, 0.5)], 1, []),
    (upwind_advection, [(ROD,), (ROD[:10].astype(np.float32), 0.25, 3)], 1, []),
    (burgers_step, [(ROD,), (ROD[:12], 0.1)], 1, []),
    (implicit_heat, [(ROD,), (ROD[:6], 0.2)], 1, []),
    (diffusion_periodic, [(FIELD,), (FIELD[:6, :8], 0.2, 2)], 1, []),
    (life_step, [(LIFE,), (LIFE[:5, :6],)], 1, []),
    (ising_energy, [(SPINS,), (SPINS[:4, :4].astype(np.float64), 0.5, 0.1)], 1, []),
    (spring_chain_forces, [(np.cumsum(np.full(6, 0.12)),), (np.linspace(0, 1, 4), 5.0, 0.3)], 1, []),
    (projectile, [(20.0, 45.0, np.linspace(0, 3, 7)), (10.0, 30.0, np.linspace(0, 1, 3).astype(np.float32))], 1, []),
    (temperature, [(VEL, MASS), (VEL[:5], MASS[:5], 2.0)], 1, []),
    (lorenz_rk4, [(STATE,), (STATE.astype(np.float32) * 2,)], 1, []),
    (pendulum_euler, [(np.linspace(0.1, 1.0, 5), np.zeros(5)), (np.full((2, 2), 0.3), np.zeros((2, 2)), 1.0)], 1, []),
    (center_of_mass, [(POS, MASS), (POS[:3], MASS[:3])], 1, []),
    (inertia_tensor, [(POS, MASS), (POS[:5], MASS[:5])], 1, []),
    (radial_profile, [(FIELD,), (FIELD[:7, :7], 3)], 1, []),
    (poisson_jacobi, [(FIELD,), (FIELD[:8, :8], 0.2, 4)], 1, []),
    (life_step_genexpr, [(LIFE,), (LIFE[:5, :6],)], 0, ["FH014"]),  # the frame runs its original code
    (energy_log, [(POS, VEL), (POS[:2], VEL[:2], 3.0)], 1, ["FH012", "FH005"]),  # nothing left to capture after
    (run_until_settled, [(ROD.copy(),), (ROD[:8].copy(), 1e-2)], 0, ["FH002"]),  # break in a loop: original code
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_physics(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
